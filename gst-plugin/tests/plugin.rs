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

/// Every element the plugin ships, each with a description and every property documented, as
/// gst-inspect-1.0 shows them.
#[test]
fn every_element_and_property_is_documented() {
    use gst::prelude::*;
    gst::init().unwrap();
    gstedgefirst::plugin_register_static().unwrap();
    let mut want = vec![
        "edgefirsttensor",
        "edgefirsttensorbatch",
        "edgefirsttensorsink",
        "edgefirsttensorsrc",
        "edgefirsttensorpay",
        "edgefirsttensordepay",
    ];
    if cfg!(feature = "zenoh") {
        want.extend(["edgefirstzenohsink", "edgefirstzenohsrc"]);
    }
    let mut have: Vec<String> = gst::Registry::get()
        .features_by_plugin("edgefirst")
        .into_iter()
        .filter(|f| f.is::<gst::ElementFactory>())
        .map(|f| f.name().to_string())
        .collect();
    have.sort();
    want.sort();
    assert_eq!(have, want);
    for name in want {
        let f = gst::ElementFactory::find(name).unwrap();
        assert!(!f.metadata(gst::ELEMENT_METADATA_DESCRIPTION).unwrap_or_default().is_empty(), "{name}");
        let el = f.create().build().unwrap();
        for p in el.list_properties() {
            if p.owner_type() == el.type_() {
                assert!(p.blurb().is_some_and(|b| !b.is_empty()), "{name}.{} has no description", p.name());
            }
        }
    }
}
