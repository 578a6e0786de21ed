//! The protocol rules a server's answers are held to beyond each scenario's status, type and
//! body: TechEmpower's header rules and some of HttpArena's protocol checks. They are a report,
//! not a gate (`framebench check --conformance`): a server that fails one is still measured,
//! and docs/methodology/conformance.md says which failures change its numbers.
//!
//! What each rule is ([`http1::RULES`], [`h2c::RULES`]) and how an answer is judged live here;
//! what sends a rule's requests over a socket is each protocol's `rules` module under
//! `crate::protocol`, one probe per rule.

pub(crate) mod h2c;
pub(crate) mod http1;

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;

use super::Observed;
use crate::fixtures::Fixtures;

/// One rule, a column of the report: its heading and what it checks.
pub(crate) struct Rule {
    /// The table's column heading.
    pub(crate) name: &'static str,
    /// What it checks, for the legend under the table.
    pub(crate) what: &'static str,
}

/// A response with its status line's version, which `parse_response` drops.
pub(crate) type Answer = http::Response<Bytes>;

/// `Ok` when `res` has header `name`.
pub(crate) fn has(res: &Answer, name: &str) -> Result<()> {
    if res.headers().contains_key(name) {
        Ok(())
    } else {
        Err(anyhow!("no `{name}` header"))
    }
}

/// The `Date` header of `res`, checked to be an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn date_of(res: &Answer) -> Result<String> {
    let date = res
        .headers()
        .get("date")
        .context("no `Date` header")?
        .to_str()
        .map_err(|_| anyhow!("a `Date` that is not text"))?;
    httpdate::parse_http_date(date).map_err(|_| anyhow!("`Date: {date}` is not an HTTP-date"))?;
    Ok(date.to_owned())
}

/// `Ok` when `res` says how long it is.
pub(crate) fn framing(res: &Answer) -> Result<()> {
    let chunked = res
        .headers()
        .get("transfer-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked || res.headers().contains_key("content-length") {
        Ok(())
    } else {
        Err(anyhow!(
            "neither `Content-Length` nor `Transfer-Encoding: chunked`"
        ))
    }
}

/// Whether `res` is what the oracle's scenario `name` answers.
pub(crate) fn matches_scenario(name: &str, fixtures: &Fixtures, res: &Answer) -> Result<()> {
    let scenario = super::scenario(name).expect("a scenario of the oracle");
    let expected = scenario.expected(fixtures)?;
    expected
        .check(&Observed::from_response(res))
        .map_err(|e| anyhow!("{name}: {e}"))
}
