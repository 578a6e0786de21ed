//! `raw` under `--protocol h2c`: the HTTP/2 reference. The h2 crate's server (the HTTP/2 under
//! hyper, axum, poem, warp, viz and gotham) with nothing above it: each stream of a fixed
//! scenario is answered inside the connection's accept loop with the headers and body encoded
//! at startup, so no task is spawned and nothing is routed but one path compare. Only the
//! query and body scenarios, whose answers depend on the request, get a task of their own (a
//! body is read while the connection goes on accepting). One work-stealing tokio runtime of
//! `--threads` workers, as the hyper-based servers run. It plays the part the HTTP/1.1 `raw`
//! plays: the floor under every server built on h2, not a proven ceiling.
//!
//! Its settings are stated, not h2's defaults (docs/methodology/http2.md): stream and
//! connection windows of 1 MiB and 256 concurrent streams, as hyper's servers advertise but
//! for their 200, so that no load the driver runs (at most 100 streams) meets a limit.

use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::{HeaderValue, Method, Request, Response, StatusCode};

use crate::handlers::{self, Reply};
use crate::server::limit::Limit;

/// The stream and connection window raw advertises: hyper's servers' default.
pub(crate) const WINDOW: u32 = 1 << 20;
/// The SETTINGS_MAX_CONCURRENT_STREAMS raw advertises.
pub(crate) const MAX_STREAMS: u32 = 256;

/// One canned answer: status, content type and body.
pub(super) struct Canned {
    pub(super) path: &'static str,
    pub(super) status: StatusCode,
    pub(super) content_type: HeaderValue,
    pub(super) body: Bytes,
}

/// Every canned answer, and the 404.
pub(super) struct Answers {
    pub(super) paths: Vec<Canned>,
    pub(super) not_found: Canned,
}

impl Answers {
    fn find(&self, path: &str) -> &Canned {
        self.paths
            .iter()
            .find(|c| c.path == path)
            .unwrap_or(&self.not_found)
    }
}

/// Serves h2c on `listener` until `stop`: one accept loop per connection. At the stop, every
/// open connection is sent GOAWAY and finishes the streams it has; the runtime drops whatever is
/// left after [`crate::options::GRACE`].
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    stop: crate::server::Stopped,
    answers: Arc<Answers>,
    limit: Option<&'static Limit>,
) {
    let mut stop = std::future::IntoFuture::into_future(stop);
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            Some(_) = connections.join_next() => continue,
            _ = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let (answers, closed) = (Arc::clone(&answers), closed.clone());
        connections.spawn(async move {
            let _ = connection(stream, &answers, limit, closed).await;
        });
    }
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
}

/// One connection: the handshake, then every stream until the client goes away, or until
/// `closed` says the server stops, when it sends GOAWAY and ends once its open streams are done.
async fn connection(
    stream: tokio::net::TcpStream,
    answers: &Answers,
    limit: Option<&Limit>,
    mut closed: tokio::sync::watch::Receiver<bool>,
) -> Result<(), h2::Error> {
    let mut conn = h2::server::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .max_concurrent_streams(MAX_STREAMS)
        .handshake::<_, Bytes>(stream)
        .await?;
    let mut stop = std::pin::pin!(closed.wait_for(|c| *c));
    let mut stopping = false;
    let mut batch = Vec::new();
    loop {
        // Every stream the connection has ready, taken in one go, then answered together: the
        // next poll of the connection writes all their answers at once, as hyper's server does
        // by answering from tasks that run after its accept loop. Answered one at a time, each
        // answer would be flushed by the accept after it, a `write` per stream. `biased`: the
        // stop is polled only when no stream is ready, so a busy connection pays nothing for it.
        let closed_by_client = tokio::select! {
            biased;
            closed = ready_streams(&mut conn, &mut batch) => closed,
            _ = &mut stop, if !stopping => {
                conn.graceful_shutdown();
                stopping = true;
                continue;
            }
        };
        for accepted in batch.drain(..) {
            let (req, respond) = accepted?;
            answer(req, respond, answers, limit);
        }
        if closed_by_client {
            break;
        }
    }
    Ok(())
}

/// A stream the connection accepted: its request and where its answer goes.
type Accepted = Result<(Request<RecvStream>, SendResponse<Bytes>), h2::Error>;

/// Waits for at least one stream, then takes every other one already there without waiting,
/// into `batch`. True when the client has closed the connection.
async fn ready_streams(
    conn: &mut h2::server::Connection<tokio::net::TcpStream, Bytes>,
    batch: &mut Vec<Accepted>,
) -> bool {
    use std::task::Poll;
    std::future::poll_fn(|cx| {
        loop {
            match conn.poll_accept(cx) {
                Poll::Ready(Some(accepted)) => batch.push(accepted),
                Poll::Ready(None) => return Poll::Ready(true),
                Poll::Pending if batch.is_empty() => return Poll::Pending,
                Poll::Pending => return Poll::Ready(false),
            }
        }
    })
    .await
}

/// Answers one stream: a fixed scenario at once, with its canned answer; a query or body
/// scenario from a task of its own, which reads the body while the connection goes on.
fn answer(
    req: Request<RecvStream>,
    respond: SendResponse<Bytes>,
    answers: &Answers,
    limit: Option<&Limit>,
) {
    if let Some(limit) = limit {
        limit.record();
    }
    let (method, uri) = (req.method(), req.uri());
    if !matches!(uri.path(), "/sum" | "/upload" | "/json_in") {
        let head = *method == Method::HEAD;
        if *method == Method::GET || head {
            // The whole target, as the HTTP/1.1 raw matches its request line: the redis
            // scenario's canned answer is for `/get?key=foo` only.
            let target = uri.path_and_query().map_or("/", |p| p.as_str());
            let _ = canned(respond, answers.find(target), head);
        } else {
            let _ = reply(respond, Reply::error(405), false);
        }
        return;
    }
    tokio::spawn(async move {
        let answer = computed_answer(req).await;
        let _ = reply(respond, answer, false);
    });
}

/// The answer of `/sum`, `/upload` or `/json_in`, from the request and its body.
async fn computed_answer(req: Request<RecvStream>) -> Reply {
    let (parts, body) = req.into_parts();
    let get = parts.method == Method::GET || parts.method == Method::HEAD;
    match (parts.uri.path(), get) {
        ("/sum", true) => handlers::operands_from_query(parts.uri.query())
            .map_or_else(|| Reply::error(400), handlers::sum),
        ("/sum", false) => Reply::error(405),
        (_, true) => Reply::error(405),
        (path, false) => {
            let Some(bytes) = read_body(body).await else {
                return Reply::error(400);
            };
            match path {
                "/upload" => handlers::upload(&bytes),
                _ => handlers::operands_from_json(&bytes)
                    .map_or_else(|| Reply::error(400), handlers::json_in),
            }
        }
    }
}

/// The whole request body, giving its window back as it arrives; `None` when the stream fails
/// or the body passes the HTTP/1.1 raw's limit.
async fn read_body(mut body: RecvStream) -> Option<Bytes> {
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.ok()?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
        if out.len() > super::MAX_BODY {
            return None;
        }
    }
    Some(out.freeze())
}

/// Sends a canned answer: its head alone for `HEAD`.
fn canned(
    mut respond: SendResponse<Bytes>,
    answer: &Canned,
    head_only: bool,
) -> Result<(), h2::Error> {
    let mut res = Response::new(());
    *res.status_mut() = answer.status;
    let headers = res.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, answer.content_type.clone());
    headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(answer.body.len()));
    headers.insert(http::header::DATE, date());
    let empty = head_only || answer.body.is_empty();
    let mut send = respond.send_response(res, empty)?;
    if !empty {
        send.send_data(answer.body.clone(), true)?;
    }
    Ok(())
}

/// Sends a computed answer.
fn reply(respond: SendResponse<Bytes>, reply: Reply, head_only: bool) -> Result<(), h2::Error> {
    let answer = Canned {
        path: "",
        status: StatusCode::from_u16(reply.status).unwrap_or(StatusCode::NOT_FOUND),
        content_type: HeaderValue::from_static(
            reply.content_type.unwrap_or(crate::oracle::TEXT_PLAIN),
        ),
        body: reply.body,
    };
    canned(respond, &answer, head_only)
}

/// The `Date` header's value, formatted at most once a second per thread, as the HTTP/1.1 raw
/// and hyper do.
fn date() -> HeaderValue {
    use std::cell::RefCell;
    use std::time::{SystemTime, UNIX_EPOCH};
    thread_local! {
        static CACHE: RefCell<(u64, Option<HeaderValue>)> = const { RefCell::new((0, None)) };
    }
    let now = SystemTime::now();
    let second = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        match &cache.1 {
            Some(v) if cache.0 == second => v.clone(),
            _ => {
                let v = HeaderValue::from_str(&httpdate::fmt_http_date(now))
                    .unwrap_or(HeaderValue::from_static(""));
                *cache = (second, Some(v.clone()));
                v
            }
        }
    })
}
