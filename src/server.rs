//! A blocking accept loop with a clean shutdown, for the servers built on std sockets: iron and
//! nickel (through hyper 0.10's connection loop) and the `raw` reference.
//!
//! hyper 0.10's own `Listening::close` does not stop its threads (its docs say so), so
//! framebench accepts connections itself and hands each to the framework's connection handler.
//! The pool keeps hyper 0.10's model: `threads` acceptor threads, each serving one connection
//! at a time until it closes, so connections beyond the pool wait in the backlog.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use crate::framework::ServerHandle;

pub(crate) mod limit;

/// Serves a connection until it closes. Gets a stop flag to check between requests.
pub(crate) type Handler = dyn Fn(TcpStream, SocketAddr, &AtomicBool) + Send + Sync;

struct Shared {
    stop: AtomicBool,
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, TcpStream>>,
    handler: Arc<Handler>,
}

impl Shared {
    /// Serves one accepted connection, registered so that shutdown can close it.
    fn serve(&self, stream: TcpStream, peer: SocketAddr) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(clone) = stream.try_clone() {
            self.live.lock().unwrap().insert(id, clone);
        }
        // A stop that raced with this accept has already swept `live`: close it ourselves.
        if !self.stop.load(Ordering::SeqCst) {
            (self.handler)(stream, peer, &self.stop);
        }
        self.live.lock().unwrap().remove(&id);
    }
}

/// Starts serving `listener` with `threads` acceptor threads (each serves one connection at a
/// time) and returns once it accepts.
pub(crate) fn serve(
    listener: TcpListener,
    threads: usize,
    handler: Arc<Handler>,
) -> io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    let listener = Arc::new(listener);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        next_id: AtomicU64::new(0),
        live: Mutex::new(HashMap::new()),
        handler,
    });
    let acceptors = threads.max(1);
    let mut handles = Vec::new();
    for i in 0..acceptors {
        let listener = Arc::clone(&listener);
        let shared = Arc::clone(&shared);
        let t = thread::Builder::new()
            .name(format!("fb-accept-{i}"))
            .spawn(move || accept_loop(&listener, &shared))?;
        handles.push(t);
    }
    let stop_shared = Arc::clone(&shared);
    let stop = move || {
        stop_shared.stop.store(true, Ordering::SeqCst);
        for stream in stop_shared.live.lock().unwrap().values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Wake every acceptor blocked in accept(): each sees the flag and returns.
        for _ in 0..acceptors {
            let _ = TcpStream::connect(addr);
        }
    };
    Ok(ServerHandle::new(addr, stop, handles))
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            // Out of descriptors or an aborted handshake: keep serving the others.
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        shared.serve(stream, peer);
    }
}

/// The runtime a tokio framework dispatches in-process requests on: one current thread, like
/// one worker, with time and I/O enabled and the blocking pool that `tokio::fs` (static-file
/// facilities) needs.
pub(crate) fn in_process_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Sets `TCP_NODELAY` on a listening socket, for servers whose accepted sockets framebench cannot
/// reach (warp's acceptor is sealed, salvo's has no setting). Linux copies the option to every
/// connection the listener accepts, so this is `TCP_NODELAY` on accepted connections, set once
/// instead of per accept.
pub(crate) fn nodelay_on_accepted(listener: &TcpListener) -> io::Result<()> {
    enable_socket_option(listener, libc::IPPROTO_TCP, libc::TCP_NODELAY)
}

/// Turns a boolean socket option on (`setsockopt` with the value 1).
pub(crate) fn enable_socket_option(
    socket: &impl std::os::fd::AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, and a pointer to a c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// How long a tokio server waits for open connections to finish after being told to stop.
pub(crate) const GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs a tokio server on its own thread with a multi-threaded runtime of `threads` workers.
/// `serve` gets the listener and a future that resolves when the server must stop; it should
/// stop accepting then and let open connections finish. Whatever is still running [`GRACE`]
/// after the stop is dropped with the runtime, so a stalled connection cannot hold it up.
pub(crate) fn spawn_tokio<F, Fut>(
    listener: TcpListener,
    threads: usize,
    serve: F,
) -> anyhow::Result<ServerHandle>
where
    F: FnOnce(tokio::net::TcpListener, Stopped) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name("fb-tokio")
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let thread = thread::Builder::new()
        .name("fb-serve".into())
        .spawn(move || {
            let listener = {
                let _guard = rt.enter();
                tokio::net::TcpListener::from_std(listener)
            };
            if let Ok(listener) = listener {
                let stopped = Stopped(stop_rx.clone());
                let deadline = async {
                    stopped.await;
                    tokio::time::sleep(GRACE).await;
                };
                rt.block_on(async {
                    tokio::select! {
                        _ = serve(listener, Stopped(stop_rx)) => {}
                        _ = deadline => {}
                    }
                });
            }
            rt.shutdown_timeout(GRACE);
        })?;
    Ok(ServerHandle::new(
        addr,
        move || {
            let _ = stop_tx.send(true);
        },
        vec![thread],
    ))
}

/// Resolves once the server is asked to stop.
pub(crate) struct Stopped(tokio::sync::watch::Receiver<bool>);

impl std::future::IntoFuture for Stopped {
    type Output = ();
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

    fn into_future(mut self) -> Self::IntoFuture {
        Box::pin(async move {
            let _ = self.0.wait_for(|stop| *stop).await;
        })
    }
}
