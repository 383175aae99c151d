//! What both Zenoh elements share: the session settings (properties) and the session they open.
//! Peer mode with explicit endpoints needs no router: one side listens, the other connects.

use gst::glib;
use gst::prelude::*;
use zenoh::Wait;

pub const DEFAULT_KEY: &str = "edgefirst/tensor";

#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub key: String,
    pub mode: String,
    pub listen: String,
    pub connect: String,
    pub multicast_scouting: bool,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            key: DEFAULT_KEY.into(),
            mode: "peer".into(),
            listen: String::new(),
            connect: String::new(),
            multicast_scouting: true,
        }
    }
}

/// The session properties, as both elements declare them.
pub fn properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecString::builder("key-expr")
            .nick("Key expression")
            .blurb("Zenoh key the tensors are published on")
            .default_value(Some(DEFAULT_KEY))
            .build(),
        glib::ParamSpecString::builder("mode")
            .nick("Session mode")
            .blurb("Zenoh session mode: peer (no router needed) or client (through a router)")
            .default_value(Some("peer"))
            .build(),
        glib::ParamSpecString::builder("listen")
            .nick("Listen endpoints")
            .blurb("Comma-separated endpoints to listen on, e.g. tcp/0.0.0.0:7447 (empty: Zenoh's default)")
            .default_value(Some(""))
            .build(),
        glib::ParamSpecString::builder("connect")
            .nick("Connect endpoints")
            .blurb("Comma-separated endpoints to connect to, e.g. tcp/192.168.1.10:7447 (empty: none)")
            .default_value(Some(""))
            .build(),
        glib::ParamSpecBoolean::builder("multicast-scouting")
            .nick("Multicast scouting")
            .blurb("Find peers on the local network by UDP multicast (off: only the endpoints given)")
            .default_value(true)
            .build(),
    ]
}

/// Set a session property; false if `name` is not one.
pub fn set(s: &mut SessionSettings, name: &str, value: &glib::Value) -> bool {
    let text = || value.get::<Option<String>>().ok().flatten().unwrap_or_default();
    match name {
        "key-expr" => s.key = text(),
        "mode" => s.mode = text(),
        "listen" => s.listen = text(),
        "connect" => s.connect = text(),
        "multicast-scouting" => s.multicast_scouting = value.get().unwrap_or(true),
        _ => return false,
    }
    true
}

pub fn get(s: &SessionSettings, name: &str) -> Option<glib::Value> {
    Some(match name {
        "key-expr" => s.key.to_value(),
        "mode" => s.mode.to_value(),
        "listen" => s.listen.to_value(),
        "connect" => s.connect.to_value(),
        "multicast-scouting" => s.multicast_scouting.to_value(),
        _ => return None,
    })
}

/// A JSON5 list of endpoints; an endpoint with a quote or backslash is refused rather than
/// escaped (no Zenoh locator has one).
fn endpoint_list(what: &str, csv: &str) -> Result<String, String> {
    let mut items = Vec::new();
    for e in csv.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if e.contains(['"', '\\']) || !e.contains('/') {
            return Err(format!("{what} endpoint {e:?} is not a locator like tcp/127.0.0.1:7447"));
        }
        items.push(format!("\"{e}\""));
    }
    Ok(format!("[{}]", items.join(",")))
}

/// Open a session per the settings. Every refusal names the property and value.
pub fn open(s: &SessionSettings) -> Result<zenoh::Session, String> {
    if !matches!(s.mode.as_str(), "peer" | "client") {
        return Err(format!("mode {:?}: peer or client", s.mode));
    }
    zenoh::key_expr::KeyExpr::try_from(s.key.clone()).map_err(|e| format!("key-expr {:?}: {e}", s.key))?;
    let mut c = zenoh::Config::default();
    let set = |c: &mut zenoh::Config, k: &str, v: &str| {
        c.insert_json5(k, v).map_err(|e| format!("zenoh config {k} = {v}: {e}"))
    };
    set(&mut c, "mode", &format!("\"{}\"", s.mode))?;
    set(&mut c, "scouting/multicast/enabled", if s.multicast_scouting { "true" } else { "false" })?;
    if !s.listen.trim().is_empty() {
        set(&mut c, "listen/endpoints", &endpoint_list("listen", &s.listen)?)?;
    }
    if !s.connect.trim().is_empty() {
        set(&mut c, "connect/endpoints", &endpoint_list("connect", &s.connect)?)?;
    }
    zenoh::open(c).wait().map_err(|e| format!("opening the Zenoh session: {e}"))
}
