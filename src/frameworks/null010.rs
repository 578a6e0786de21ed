//! `null-hyper010`: the in-process floor of the hyper 0.10 frameworks. A hyper 0.10 `Handler`
//! that answers from the same table of prepared responses as `null`, dispatched through the
//! same plumbing as iron and nickel ([`crate::hyper010::dispatch`]: the request encoded and
//! parsed by hyper 0.10, the response written by hyper 0.10 and parsed back). Its time per
//! call is that plumbing's cost, to subtract from iron's and nickel's. The query and body
//! scenarios cannot be canned: as `null` does, it computes their answers from hyper 0.10's
//! request with the least work there is (the operands parsed by hand, the body read through
//! `Read` and digested), without a router or serde.

use std::io::Read;
use std::net::TcpListener;

use anyhow::bail;
use bytes::Bytes;
use hyper010::header::ContentType;
use hyper010::method::Method;
use hyper010::server::{Handler, Request as HyperRequest, Response as HyperResponse};
use hyper010::status::StatusCode;
use hyper010::uri::RequestUri;

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle, Version};
use crate::handlers::{self, Reply};

/// The in-process floor of iron and nickel.
pub(crate) struct Null010 {
    handler: CannedRoutes,
}

impl Framework for Null010 {
    const NAME: &'static str = "null-hyper010";
    const CRATE: &'static str = "hyper";
    const VERSION_PREFIX: &'static str = "0.10.";
    const ABOUT: About = About {
        crate_label: None,
        version: Version::Locked(""),
        companions: &[],
        static_files: "–",
        in_process: "canned responses through the same hyper 0.10 byte path as iron and nickel: subtract it",
        server: "–",
    };
    const BASELINE: bool = true;
    const LOOPBACK: bool = false;
    const PROTOCOLS: &'static [(Protocol, Support)] =
        &[(Protocol::H2c, Support::Unsupported("a floor for in-process dispatch: it has no server"))];
    const CANNOT: &'static [(&'static str, &'static str)] =
        &[("delay", "an in-process floor, with no server: delay is a loopback scenario only")];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let routes = super::canned(&config.fixtures)?
            .into_iter()
            .map(|c| {
                let content_type = ContentType(
                    c.content_type
                        .parse()
                        .map_err(|()| anyhow::anyhow!("bad content type {:?}", c.content_type))?,
                );
                Ok((c.path, StatusCode::from_u16(c.status), content_type, c.body))
            })
            .collect::<anyhow::Result<_>>()?;
        let not_found = ContentType(crate::oracle::TEXT_PLAIN.parse().expect("valid mime"));
        Ok(Null010 {
            handler: CannedRoutes { routes, not_found },
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        crate::hyper010::dispatch(&self.handler, req)
    }

    fn serve(&self, _listener: TcpListener) -> anyhow::Result<ServerHandle> {
        bail!("null-hyper010 is in-process only: it measures the in-process plumbing")
    }
}

/// Answers the query and body scenarios computed, every other path from the table; anything
/// else is an empty 404, as `null` does.
struct CannedRoutes {
    routes: Vec<(&'static str, StatusCode, ContentType, Bytes)>,
    not_found: ContentType,
}

impl Handler for CannedRoutes {
    fn handle(&self, mut req: HyperRequest, mut res: HyperResponse) {
        if let Some(reply) = computed(&mut req) {
            *res.status_mut() = StatusCode::from_u16(reply.status);
            res.headers_mut().set(ContentType(crate::hyper010::mime(
                reply.content_type.unwrap_or(crate::oracle::TEXT_PLAIN),
            )));
            let _ = res.send(&reply.body);
            return;
        }
        let path = match req.uri {
            // The whole target: the redis scenario's canned answer is for `/get?key=foo` only.
            RequestUri::AbsolutePath(ref p) => p.as_str(),
            _ => "",
        };
        let Some((_, status, content_type, body)) = self.routes.iter().find(|r| r.0 == path) else {
            *res.status_mut() = StatusCode::NotFound;
            res.headers_mut().set(self.not_found.clone());
            let _ = res.send(b"");
            return;
        };
        *res.status_mut() = *status;
        res.headers_mut().set(content_type.clone());
        let _ = res.send(body);
    }
}

/// The answer to a query or body scenario's request, computed; `None` for every other route.
fn computed(req: &mut HyperRequest) -> Option<Reply> {
    // The body is read before the target is borrowed: only the body scenarios POST.
    let post = req.method == Method::Post;
    let body = if post { read_body(req) } else { None };
    let RequestUri::AbsolutePath(target) = &req.uri else {
        return None;
    };
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target.as_str(), None),
    };
    handlers::computed(path, query, post, body.as_deref())
}

/// The whole body, or `None` when it cannot be read.
fn read_body(req: &mut HyperRequest) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    req.read_to_end(&mut body).ok()?;
    Some(body)
}
