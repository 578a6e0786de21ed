//! `null`: the in-process floor. It looks the path up in a table of responses prepared at
//! startup and returns a clone, so its time per call is the harness's own cost (building the
//! request, the call through the trait, collecting the response). The query and body scenarios
//! cannot be canned: it computes their answers from the prepared request with the least work
//! there is (the operands parsed by hand, the body's digest), without a router or serde.

use std::net::TcpListener;

use anyhow::bail;
use bytes::Bytes;

use crate::framework::{About, Config, Framework, Protocol, Support, Request, Response, ServerHandle};

/// The in-process floor.
pub struct Null {
    routes: Vec<(&'static str, Response)>,
    not_found: Response,
}

impl Framework for Null {
    const NAME: &'static str = "null";
    const CRATE: &'static str = "framebench";
    const VERSION_PREFIX: &'static str = "";
    const ABOUT: About = About::own(
        "a table of prepared responses: the harness's own floor",
        "–",
    );
    const BASELINE: bool = true;
    const LOOPBACK: bool = false;
    const PROTOCOLS: &'static [(Protocol, Support)] =
        &[(Protocol::H2c, Support::Unsupported("a floor for in-process dispatch: it has no server"))];
    const CANNOT: &'static [(&'static str, &'static str)] =
        &[("delay", "an in-process floor, with no server: delay is a loopback scenario only")];

    fn build(config: &Config) -> anyhow::Result<Self> {
        let routes = super::canned(&config.fixtures)?
            .into_iter()
            .map(|c| (c.path, response(c.status, c.content_type, c.body)))
            .collect();
        let not_found = response(404, crate::oracle::TEXT_PLAIN, Bytes::new());
        Ok(Null { routes, not_found })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let (uri, post) = (req.uri(), req.method() == http::Method::POST);
        let body = Some(&req.body()[..]);
        if let Some(reply) = crate::handlers::computed(uri.path(), uri.query(), post, body) {
            return Ok(response(
                reply.status,
                reply.content_type.unwrap_or(crate::oracle::TEXT_PLAIN),
                reply.body,
            ));
        }
        // The whole target: the redis scenario's canned answer is for `/get?key=foo` only.
        let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
        let res = self
            .routes
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(&self.not_found, |(_, r)| r);
        let mut out = http::Response::new(res.body().clone());
        *out.status_mut() = res.status();
        *out.headers_mut() = res.headers().clone();
        Ok(out)
    }

    fn serve(&self, _listener: TcpListener) -> anyhow::Result<ServerHandle> {
        bail!("null is in-process only: it has no server (use raw, the loopback reference)")
    }
}

fn response(status: u16, content_type: &str, body: Bytes) -> Response {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::CONTENT_LENGTH, body.len())
        .body(body)
        .expect("valid canned response")
}
