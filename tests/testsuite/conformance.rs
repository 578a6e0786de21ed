//! Every registered framework answers every scenario as the oracle says, in every variant, both
//! in-process and over loopback, and refuses every traversal attempt.

use framebench::check::{check_framework, print_table};
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::options::Options;
use framebench::redis::RedisServer;

#[test]
fn every_framework_matches_the_oracle() {
    let fixtures = Fixtures::load_default().unwrap();
    // A real redis-server for the redis scenario (skipped with a message without one). Started
    // here, not by `framebench::redis::provide`, which also sets `$FRAMEBENCH_REDIS` in this
    // process: in the suite's one process that variable would reach the `framebench` children
    // of every other test, and outlive this server.
    let redis = framebench::redis::available()
        .is_ok()
        .then(|| RedisServer::start().unwrap());
    let url = redis.as_ref().map(RedisServer::url);
    let base = Config::new(fixtures, url.as_deref());
    let mut rows = Vec::new();
    for entry in REGISTRY {
        rows.extend(check_framework(entry, &base, &Options::variants(2)));
    }
    // Every framework was checked in each mode it supports, for all four variants.
    // Frameworks this machine cannot run (the Go peers without `go`) are skipped with a message.
    let expected_rows: usize = REGISTRY
        .iter()
        .filter(|e| e.available().is_ok())
        .map(|e| 4 * (usize::from(e.in_process) + usize::from(e.loopback)))
        .sum();
    assert_eq!(rows.len(), expected_rows);
    let failing = print_table(&rows);
    assert_eq!(failing, 0, "{failing} rows fail the oracle (table above)");
}
