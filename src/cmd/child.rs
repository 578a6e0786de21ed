//! `framebench child` (hidden): a framework that runs in a child process (may-minihttp), served
//! on the listener its parent passed as descriptor 3; `serve` starts it.

use std::process::ExitCode;

use super::args::ServerArgs;
use crate::framework::Config;

/// `framebench child`.
#[derive(clap::Args)]
pub struct ChildArgs {
    /// Framework name.
    framework: String,
    #[command(flatten)]
    server: ServerArgs,
    /// The parent's Redis, used as given (no server is started for it).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
}

/// `framebench child`: serves a framework that runs in a child process (may-minihttp) on the
/// listener its parent passed as descriptor 3, with the parent's Redis as given.
pub fn run(args: ChildArgs) -> anyhow::Result<ExitCode> {
    let config = Config::new(
        crate::fixtures::Fixtures::load_default()?,
        args.redis.as_deref(),
    )
    .with(args.server.options());
    crate::select::framework(&args.framework)?.serve_child(&config)?;
    Ok(ExitCode::SUCCESS)
}
