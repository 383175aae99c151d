//! The plugin registers under its documented name with a licence GStreamer accepts.

#[test]
fn plugin_registers_as_edgefirst() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let plugin = gst::Registry::get().find_plugin("edgefirst").expect("plugin `edgefirst` registered");
    assert_eq!(plugin.plugin_name(), "edgefirst");
    assert_eq!(plugin.license(), "MIT/X11");
}
