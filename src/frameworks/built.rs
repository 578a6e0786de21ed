//! What a framework served on tokio keeps from `build`: its config, its app built once for
//! in-process requests, and the current-thread runtime those requests run on. The frameworks
//! that serve through [`server::spawn_tokio`] share it, each as a newtype
//! (`pub(crate) struct Poem(Built<BoxEndpoint<'static>>)`), so that `build` is one line and
//! `serve` starts its runtimes from the config it kept.

use std::net::TcpListener;

use http_body_util::BodyExt as _;

use crate::framework::{Config, Response, ServerHandle};
use crate::server::{self, Stopped};

/// A tokio framework's built state: the app for in-process requests and their runtime.
pub(crate) struct Built<A> {
    /// What each server builds its own app from (its own Redis pool, on its own runtime).
    pub(crate) config: Config,
    /// The in-process app. Declared before `rt`, so that it is dropped while its runtime exists
    /// (its Redis pool's connections live on `rt`).
    pub(crate) app: A,
    /// The runtime in-process requests run on ([`server::in_process_runtime`]).
    pub(crate) rt: tokio::runtime::Runtime,
}

impl<A> Built<A> {
    /// Builds the runtime, then the app with `app(config)`: the framework's one place where
    /// its app is put together.
    pub(crate) fn new(config: &Config, app: impl FnOnce(&Config) -> A) -> anyhow::Result<Self> {
        let rt = server::in_process_runtime()?;
        Ok(Built {
            config: config.clone(),
            app: app(config),
            rt,
        })
    }

    /// Serves on `listener` with the runtimes the kept config asks for (`threads`, `runtime`):
    /// [`server::spawn_tokio`], which calls `serve` once per runtime.
    pub(crate) fn spawn<F, Fut>(
        &self,
        listener: TcpListener,
        serve: F,
    ) -> anyhow::Result<ServerHandle>
    where
        F: Fn(tokio::net::TcpListener, Stopped) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        server::spawn_tokio(listener, self.config.options, serve)
    }
}

/// An in-process response with an `http-body` 1 body (hyper 1's), collected: what `dispatch`
/// returns for the frameworks built on hyper 1.
pub(crate) async fn collected<B>(res: http::Response<B>) -> anyhow::Result<Response>
where
    B: hyper::body::Body,
    B::Error: std::fmt::Display,
{
    let (parts, body) = res.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|err| anyhow::anyhow!("body: {err}"))?;
    Ok(Response::from_parts(parts, body.to_bytes()))
}
