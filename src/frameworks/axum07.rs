//! axum 0.7, the release before the current 0.8 (`axum.rs`), through the renamed dependency
//! `axum07`: `Router` with tower-http's `ServeDir` for static files and its trace layer for
//! logging, the same tower-http as axum 0.8 (both use http 1 and http-body 1). `app()` is the
//! only place the app is built: in-process requests go through it with tower's `oneshot` on a
//! current-thread runtime, and `axum07::serve` serves the same router with a tokio runtime of
//! `threads` workers. The code is axum 0.8's ([`super::axum_app`]), compiled against 0.7; what
//! is particular to 0.7 is below.

super::axum_app::axum_app! {
    crate: axum07,
    type: Axum07,
    doc: "axum 0.7 behind the framebench trait.",
    name: "axum07",
    version_prefix: "0.7.",
    paste_route: "/paste/:name",
    static_route: "/static/:name",
    // 0.7's `serve` has a setting for TCP_NODELAY.
    serve: |listener, service| axum07::serve(listener, service).tcp_nodelay(true),
    about: About {
        crate_label: Some("axum (renamed `axum07`)"),
        version: Version::Locked(""),
        companions: &[("tower-http", "0.7.")],
        static_files: "tower-http `ServeDir` (the same as axum 0.8's)",
        in_process: "tower `oneshot`",
        server: "`axum::serve` (0.7) on tokio with `--threads` workers",
    },
}
