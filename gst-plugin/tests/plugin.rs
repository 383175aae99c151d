//! The plugin registers under its documented name with a licence GStreamer accepts, a real
//! origin, and the licence's text in the repository.

#[test]
fn plugin_registers_as_edgefirst() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let plugin = gst::Registry::get().find_plugin("edgefirst").expect("plugin `edgefirst` registered");
    assert_eq!(plugin.plugin_name(), "edgefirst");
    assert_eq!(plugin.license(), "MIT/X11");
}

#[test]
fn origin_and_licence_are_real() {
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let plugin = gst::Registry::get().find_plugin("edgefirst").unwrap();
    let origin = plugin.origin();
    assert!(origin.starts_with("https://github.com/"), "{origin}");
    assert!(!origin.contains("invalid"), "{origin}");
    let licence = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../LICENSE")).unwrap();
    assert!(licence.starts_with("MIT License"), "the LICENSE file is the MIT text the crates declare");
    assert!(licence.contains("Permission is hereby granted, free of charge"));
}
