//! The accept loop of the servers framebench writes on hyper's connection API (hyper, and
//! axum's TLS server, which `axum::serve` cannot be): accept until told to stop, hand each
//! connection over with TCP_NODELAY set, then give the open ones [`GRACE`] to finish; and,
//! over TLS, the handshake on the connection's own task before it is served.

use std::future::Future;
use std::net::SocketAddr;

use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::options::GRACE;
use crate::server::Stopped;

/// Accepts on `listener` until `stop`, calling `serve` with each connection (TCP_NODELAY set),
/// its peer and the graceful stop that watches it; then waits for the watched connections to
/// finish, for at most [`GRACE`].
pub(crate) async fn until_stopped(
    listener: tokio::net::TcpListener,
    stop: Stopped,
    mut serve: impl FnMut(TcpStream, SocketAddr, &GracefulShutdown),
) {
    let mut stop = std::future::IntoFuture::into_future(stop);
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(_) => continue,
            },
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        serve(stream, peer, &graceful);
    }
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(GRACE) => {}
    }
}

/// Over TLS: a task of the connection's own completes the handshake
/// ([`crate::transport::tls::accept`]; a failed or stalled one closes the connection and
/// holds nothing else), then runs `serve` on the TLS stream with a watcher of `graceful`.
pub(crate) fn tls<F, Fut>(
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: TcpStream,
    graceful: &GracefulShutdown,
    serve: F,
) where
    F: FnOnce(TokioIo<TlsStream<TcpStream>>, Watcher) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (acceptor, watcher) = (acceptor.clone(), graceful.watcher());
    tokio::spawn(async move {
        if let Some(stream) = crate::transport::tls::accept(&acceptor, stream).await {
            serve(TokioIo::new(stream), watcher).await;
        }
    });
}
