//! `kolo manager` (skeleton).

/// `kolo manager` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run the admission webhook server alone.
    Webhook {},
}

/// Runs the command.
pub fn run(_command: Command) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("not implemented yet".into())
}
