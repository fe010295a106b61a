//! `kolo noderesource` (skeleton).

/// Arguments of `kolo noderesource`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(
    _args: &Args,
    _out: &mut dyn std::io::Write,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    Err("not implemented yet".into())
}
