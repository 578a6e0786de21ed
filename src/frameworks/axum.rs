//! axum 0.8: `Router` with tower-http's `ServeDir` for static files and its trace layer for
//! logging. `app()` is the only place the app is built: in-process requests go through it with
//! tower's `oneshot`, and `axum::serve` serves the same router. The code is shared with axum 0.7
//! ([`super::axum_app`]); what is particular to 0.8 is below.

use axum::serve::ListenerExt as _;

super::axum_app::axum_app! {
    crate: axum,
    type: Axum,
    doc: "axum behind the framebench trait.",
    name: "axum",
    version_prefix: "0.8.",
    paste_route: "/paste/{name}",
    static_route: "/static/{name}",
    // TCP_NODELAY through the listener (0.8 removed `serve`'s setting for it).
    serve: |listener: tokio::net::TcpListener, service| {
        axum::serve(
            listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            }),
            service,
        )
    },
    about: About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[("tower-http", "0.7.")],
        static_files: "tower-http `ServeDir`",
        in_process: "tower `oneshot`",
        server: "`axum::serve` on tokio with `--threads` workers",
    },
}
