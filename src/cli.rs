//! What every command shares: a failure with its exit code. `main.rs` prints it as one
//! `error: …` line and exits with the code; the commands in [`crate::bench::cli`] and
//! [`crate::driver::cli`] return it.

/// A failure with its exit code: 2 for usage errors, 1 for everything else.
pub struct CliError(pub u8, pub String);

impl CliError {
    /// A usage error (exit 2): the command line asked for something that cannot be.
    pub fn usage(msg: String) -> Self {
        CliError(2, msg)
    }

    /// A failure of the run (exit 1), with the whole chain of causes on one line.
    pub fn fail(e: anyhow::Error) -> Self {
        CliError(1, format!("{e:#}"))
    }
}

/// The oracle's scenario called `name`, or the usage error every command gives for an unknown
/// one.
pub fn scenario(name: &str) -> Result<&'static crate::oracle::Scenario, CliError> {
    crate::oracle::scenario(name).ok_or_else(|| {
        CliError::usage(format!(
            "unknown scenario '{name}' (one of: {})",
            crate::oracle::names().join(", ")
        ))
    })
}

/// The registry entry called `name`, or the usage error every command gives for an unknown one.
pub fn framework(name: &str) -> Result<&'static crate::framework::Entry, CliError> {
    crate::frameworks::find(name).ok_or_else(|| {
        CliError::usage(format!(
            "unknown framework '{name}' (compiled in: {}; others need their Cargo feature)",
            crate::frameworks::names().join(", ")
        ))
    })
}
