//! `kolo webhook` (skeleton).

/// `kolo webhook` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Mutate a pod with colocation profiles.
    Mutate {},
}

/// Runs the command.
pub fn run(
    _command: &Command,
    _out: &mut dyn std::io::Write,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("not implemented yet".into())
}
