//! The registry: one line per framework. Adding a framework means one Cargo feature, one file
//! here and one line in [`registry!`], which builds [`REGISTRY`] (docs/adding-a-framework.md
//! walks through it).
//!
//! Every framework file reads in the same order, so that knowing one is knowing them all:
//!
//! 1. **Module doc**: the framework and its version, how the app is written (its router, static
//!    files, logger), how in-process requests reach it, how it serves and what `threads` means.
//! 2. **The app type**, `pub struct <Name>`: what `build` keeps; for the frameworks served
//!    through [`crate::server::spawn_tokio`], a newtype over `built::Built`.
//! 3. **`fn app(config)`**: the one place the app is put together (routes, static files for each
//!    io mode, the logger when logging is on), used by in-process and served requests alike.
//!    The shared state is [`crate::handlers::AppState`].
//! 4. **`impl Framework`**: the constants, then `build`, `dispatch`, `serve`.
//! 5. **Handlers**, one per route, in the order of the routes: each extracts what the framework
//!    hands it and calls [`crate::handlers`], which answers with a [`crate::handlers::Reply`].
//! 6. **Glue**: the one conversion from `Reply` into the framework's response, then whatever
//!    this framework needs that the others do not (guards, a logger middleware around
//!    [`crate::logging::Started`], copies of private framework code). Each difference carries
//!    its fairness comment where it happens.
//!
//! The baselines (`null`, `null-hyper010`, `raw`) serve [`canned`] answers instead of handlers,
//! and the Go peers are programs of their own; they follow the same order where it applies.
//! may-minihttp serves from a child framebench process ([`crate::child::serve_on`]).

use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::oracle::SCENARIOS;

// Shared by axum and axum07: a file that is not a registry line's module.
#[cfg(all(any(feature = "axum", feature = "axum07"), not(test)))]
mod axum_app;
// Shared by hyper and axum's and warp's TLS servers: the accept loop on hyper's connection API.
#[cfg(all(
    any(
        feature = "axum",
        feature = "axum07",
        feature = "hyper",
        feature = "warp"
    ),
    not(test)
))]
mod accept;
// Shared by the servers whose WebSocket echo is tokio-tungstenite on hyper's upgrade (gotham,
// hyper): the echo loop and the handshake's accept value.
#[cfg(all(
    any(feature = "gotham", feature = "hyper", feature = "hyper014"),
    not(test)
))]
mod tungstenite_echo;
// Shared by the frameworks served through `server::spawn_tokio`: a file that is not a registry
// line's module.
#[cfg(all(
    not(test),
    any(
        feature = "axum",
        feature = "axum07",
        feature = "gotham",
        feature = "hyper",
        feature = "hyper014",
        feature = "hyperlane",
        feature = "poem",
        feature = "rama",
        feature = "salvo",
        feature = "trillium",
        feature = "viz",
        feature = "warp",
    )
))]
mod built;

/// The registry: one line per framework module, baselines first, as
/// `[feature] in_process|server module: Type;` (`[]` when always compiled in; `server` when it
/// has no in-process path; a module with several programs, the Go peers, names each type). It
/// is the only code a new framework adds besides its file: it declares the module
/// (`#[cfg(feature)] mod module;`) and builds [`REGISTRY`]. It is a macro so that the
/// callgrind bench can name a benchmark function after each in-process framework (gungraun's
/// ids are literals). `registry!(callback)` expands to `callback! { <the lines> }`. Whether a
/// line says `in_process` is checked at compile time against the type's
/// [`crate::framework::Framework::IN_PROCESS`].
#[macro_export]
macro_rules! registry {
    ($callback:path) => {
        $callback! {
            [] in_process null: Null;
            ["hyper010"] in_process null010: Null010;
            [] server raw: Raw;
            ["iron"] in_process iron: Iron;
            ["nickel"] in_process nickel: Nickel;
            ["actix"] in_process actix: Actix;
            ["axum"] in_process axum: Axum;
            ["hyper"] in_process hyper: Hyper;
            ["rocket"] in_process rocket: Rocket;
            ["gotham"] in_process gotham: Gotham;
            ["poem"] in_process poem: Poem;
            ["warp"] in_process warp: Warp;
            ["salvo"] in_process salvo: Salvo;
            ["xitca"] in_process xitca: Xitca;
            ["ntex"] in_process ntex: Ntex;
            ["axum07"] in_process axum07: Axum07;
            ["hyper014"] in_process hyper014: Hyper014;
            ["may-minihttp"] server may_minihttp: MayMinihttp;
            ["rama"] in_process rama: Rama;
            ["ohkami"] in_process ohkami: OhkamiApp;
            ["viz"] in_process viz: Viz;
            ["trillium"] in_process trillium: Trillium;
            ["hyperlane"] in_process hyperlane: Hyperlane;
            ["go"] server go: GoPeer<go::NetHttp>, GoPeer<go::Fiber>;
        }
    };
}

/// Declares each [`registry!`] line's module, builds [`REGISTRY`] from the lines, and checks
/// each line's `in_process`.
///
/// The lib's own unit tests (`cfg(test)`) are built with the baselines only (the lines without
/// a feature: `null`, `raw`): none of them needs a framework, and leaving the frameworks out
/// spares `cargo test --release` compiling every framework's code a second time for the unit
/// test harness (docs/history.md, "CI": that second build was 252 s beside the lib's 272 s).
/// The tests that need the whole registry (the README's table, the methodology's rows) are in
/// tests/testsuite/docs.rs, against the lib as users build it.
macro_rules! entries {
    ($([$($feature:literal)?] $kind:ident $module:ident: $($ty:ident$(<$generic:ty>)?),+;)*) => {
        $(
            #[cfg(all($(feature = $feature, not(test))?))]
            mod $module;
        )*
        entries!(@flat [] $([$($feature)?] $kind $module: $($ty$(<$generic>)?),+;)*);
    };
    // One line per type: a line that names several (the Go peers) becomes one line each.
    (@flat [$($done:tt)*] $features:tt $kind:ident $module:ident: $($ty:ident$(<$generic:ty>)?),+; $($rest:tt)*) => {
        entries!(@flat [$($done)* $($features $kind $module: $ty$(<$generic>)?;)+] $($rest)*);
    };
    (@flat [$([$($feature:literal)?] $kind:ident $module:ident: $ty:ident$(<$generic:ty>)?;)*]) => {
        /// Every framework compiled in, baselines first.
        pub const REGISTRY: &[Entry] = &[$(
            #[cfg(all($(feature = $feature, not(test))?))]
            Entry::of::<$module::$ty$(<$generic>)?>(stringify!($module))
                .with_feature(concat!("" $(, $feature)?)),
        )*];
        $(
            #[cfg(all($(feature = $feature, not(test))?))]
            const _: () = assert!(
                <$module::$ty$(<$generic>)? as crate::framework::Framework>::IN_PROCESS
                    == entries!(@in_process $kind),
                concat!(stringify!($module), ": the registry line's in_process|server is wrong"),
            );
        )*
    };
    (@in_process in_process) => { true };
    (@in_process server) => { false };
}

registry!(entries);

// The README's framework table: a file that is not a registry line's module.
mod readme;
pub(crate) use readme::{markdown_table, protocol_table};

/// The in-process floor's type, for tests that wrap it in a framework of their own.
pub use null::Null;

/// Collects the Cargo feature of every registry line, compiled in or not.
macro_rules! features {
    ($([$($feature:literal)?] $kind:ident $module:ident: $($ty:ident$(<$generic:ty>)?),+;)*) => {
        /// The Cargo feature of every registry line (compiled in or not), in registry order,
        /// a line's feature each time; the baselines that are always built have none.
        #[cfg(test)]
        const FEATURES: &[&str] = &[$($($feature,)?)*];
        /// How many entries the registry's lines name: [`REGISTRY`]'s length with every
        /// feature on (tests/testsuite/docs.rs tells a full build from a partial one by it).
        pub const ENTRIES: usize = [$($(stringify!($ty)),+),*].len();
    };
}

registry!(features);

/// The in-process floor in-process figures are read against: the first in-process baseline
/// (`null`).
pub fn floor() -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.baseline && e.in_process)
}

/// The loopback reference loopback figures are read against: the baseline with a server
/// (`raw`). Not a proven ceiling (docs/methodology/loopback.md, "Raw past the quick compare").
pub(crate) fn reference() -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.baseline && e.loopback)
}

/// Looks a framework up by name.
pub fn find(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Names of every framework compiled in.
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// A response computed once at startup, for the baselines that skip routing and handlers.
pub(crate) struct Canned {
    pub(crate) path: &'static str,
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Bytes,
}

/// The answer to every fixed scenario the oracle answers with a body, prepared ahead from the
/// oracle's own table (the query and body scenarios are computed per request). The baselines serve these; the not-found case is the fallback, not a
/// row.
// Fairness: the baselines answer the redis scenario from the seeded value, canned, without
// asking Redis: they stay the floor and reference of the HTTP work alone (docs/methodology/fairness.md).
pub(crate) fn canned(fixtures: &Fixtures) -> anyhow::Result<Vec<Canned>> {
    SCENARIOS
        .iter()
        .filter(|s| s.is_fixed())
        .filter_map(|s| Some((s, s.content_type?)))
        .map(|(scenario, content_type)| {
            let expected = scenario.expected(fixtures)?;
            let body = expected.body().cloned().unwrap_or_default();
            Ok(Canned {
                path: scenario.path,
                status: scenario.status,
                content_type,
                body,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(file: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Leaving a framework's feature out of `default` would silently drop it from the quick
    /// compare and the benches: every registry feature is a default one.
    #[test]
    fn default_features_cover_the_registry() {
        let manifest = read("Cargo.toml");
        let line = manifest
            .lines()
            .find(|l| l.starts_with("default = ["))
            .expect("a default feature list");
        let default: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
        assert!(!default.is_empty(), "{line}");
        let mut missing: Vec<&str> = FEATURES
            .iter()
            .copied()
            .filter(|f| !default.contains(f) && *f != "hyper010")
            .collect();
        missing.dedup();
        assert!(
            missing.is_empty(),
            "registry features not in `default`: {missing:?}"
        );
    }
}
