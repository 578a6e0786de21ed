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

/// Binds a listener on `addr` with `SO_REUSEPORT` set before the bind, so that
/// `--runtime per-core` can bind one more listener per runtime on the same port
/// ([`spawn_tokio`]). The option changes nothing for a server with one listener: the kernel
/// spreads connections only over listeners of one owner that all set it.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    // std's TcpListener::bind sets SO_REUSEADDR on Unix too.
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    // std's backlog on Linux.
    socket.listen(1024)?;
    Ok(socket.into())
}

/// How many workers and how they are arranged, from the server's options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Workers {
    /// Worker threads (at least one).
    pub(crate) threads: usize,
    /// One work-stealing runtime, or one current-thread runtime per worker.
    pub(crate) runtime: crate::options::Runtime,
}

impl From<crate::options::Options> for Workers {
    fn from(o: crate::options::Options) -> Workers {
        Workers {
            threads: o.threads.max(1),
            runtime: o.runtime,
        }
    }
}

/// Runs a tokio server with the workers of `workers`:
///
/// - `work-stealing`: one multi-threaded runtime of `threads` workers, driven by a thread of
///   its own, with `serve` called once on `listener`.
/// - `per-core`: `threads` threads, each pinned to one of the CPUs this process may use (in
///   turn, when there are fewer) and running a current-thread runtime, with `serve` called once
///   per runtime on a listener of its own: `listener` for the first, and for each other a new
///   one bound to the same address with `SO_REUSEPORT`, so that the kernel spreads new
///   connections over the runtimes by their addresses' hash. One shared listener would wake
///   every runtime for every connection, and the first awake would take a burst of them
///   (docs/methodology/many-cores.md, "Threads and runtimes"). `listener` must come from [`bind`].
///
/// `serve` gets the listener and a future that resolves when the server must stop; it should
/// stop accepting then and let open connections finish. Whatever is still running [`crate::options::GRACE`]
/// after the stop is dropped with the runtime, so a stalled connection cannot hold it up.
pub(crate) fn spawn_tokio<F, Fut>(
    listener: TcpListener,
    workers: impl Into<Workers>,
    serve: F,
) -> anyhow::Result<ServerHandle>
where
    F: Fn(tokio::net::TcpListener, Stopped) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let workers = workers.into();
    match workers.runtime {
        crate::options::Runtime::WorkStealing => {
            spawn_work_stealing(listener, workers.threads, serve)
        }
        crate::options::Runtime::PerCore => spawn_per_core(listener, workers.threads, serve),
    }
}

/// [`spawn_tokio`]'s `work-stealing`, for a `serve` that can run only once (Rocket's launch).
pub(crate) fn spawn_work_stealing<F, Fut>(
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
        .spawn(move || run_until_stopped(rt, listener, serve, stop_rx))?;
    Ok(ServerHandle::new(
        addr,
        move || {
            let _ = stop_tx.send(true);
        },
        vec![thread],
    ))
}

/// How long a framework that binds its own socket (Rocket, hyperlane under h2c) may take to say
/// it is serving.
const START: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits for a server started with [`spawn_work_stealing`] that binds the address itself to say
/// it is bound (`Ok`) or could not start (`Err`), within [`START`]; `handle` is returned once it
/// serves, and stopped otherwise.
pub(crate) fn started(
    handle: ServerHandle,
    ready: &std::sync::mpsc::Receiver<anyhow::Result<()>>,
    name: &str,
) -> anyhow::Result<ServerHandle> {
    match ready.recv_timeout(START) {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => Err(e.context(format!("{name} failed to start"))),
        Err(_) => Err(anyhow::anyhow!(
            "{name} did not start within {} s",
            START.as_secs()
        )),
    }
}

/// [`spawn_tokio`]'s `per-core`.
fn spawn_per_core<F, Fut>(
    listener: TcpListener,
    threads: usize,
    serve: F,
) -> anyhow::Result<ServerHandle>
where
    F: Fn(tokio::net::TcpListener, Stopped) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let addr = listener.local_addr()?;
    // A framework that sets TCP_NODELAY on its listener ([`nodelay_on_accepted`]) gets it on
    // every runtime's.
    let nodelay = socket2::SockRef::from(&listener)
        .tcp_nodelay()
        .unwrap_or(false);
    let mut listeners = vec![listener];
    for _ in 1..threads.max(1) {
        let more = bind(addr).map_err(|e| {
            anyhow::anyhow!(
                "--runtime per-core: cannot bind a second listener on {addr} ({e}); the first \
                 must be bound with SO_REUSEPORT (server::bind)"
            )
        })?;
        if nodelay {
            nodelay_on_accepted(&more)?;
        }
        listeners.push(more);
    }
    let cpus = crate::pinning::allowed_cpus();
    let serve = Arc::new(serve);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut handles = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        listener.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let serve = Arc::clone(&serve);
        let stop_rx = stop_rx.clone();
        let cpu = cpus.get(i % cpus.len().max(1)).copied();
        let thread = thread::Builder::new()
            .name(format!("fb-core-{i}"))
            .spawn(move || {
                // The runtime's blocking pool (tokio::fs) is started from this thread, so it
                // inherits the one CPU too.
                crate::pinning::pin_current_thread(cpu.as_slice());
                run_until_stopped(rt, listener, |l, s| serve(l, s), stop_rx);
            })?;
        handles.push(thread);
    }
    Ok(ServerHandle::new(
        addr,
        move || {
            let _ = stop_tx.send(true);
        },
        handles,
    ))
}

/// Serves `listener` on `rt` until the stop, then [`crate::options::GRACE`] for open connections at most.
fn run_until_stopped<F, Fut>(
    rt: tokio::runtime::Runtime,
    listener: TcpListener,
    serve: F,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) where
    F: FnOnce(tokio::net::TcpListener, Stopped) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let listener = {
        let _guard = rt.enter();
        tokio::net::TcpListener::from_std(listener)
    };
    if let Ok(listener) = listener {
        let stopped = Stopped(stop_rx.clone());
        let deadline = async {
            stopped.await;
            tokio::time::sleep(crate::options::GRACE).await;
        };
        rt.block_on(async {
            tokio::select! {
                _ = serve(listener, Stopped(stop_rx)) => {}
                _ = deadline => {}
            }
        });
    }
    rt.shutdown_timeout(crate::options::GRACE);
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
