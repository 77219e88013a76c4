//! `kite demo` in a build without the `demo` feature: it takes whatever it
//! is given and says how to get the demo, instead of an unknown-command error.

/// The arguments of `kite demo`, which this build does not have.
#[derive(clap::Args, Debug)]
pub(crate) struct DemoArgs {
    /// Whatever was given; ignored.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _ignored: Vec<String>,
}

/// Says, in one sentence, that this build has no demo and how to run it.
pub(crate) async fn run(_args: DemoArgs) -> anyhow::Result<()> {
    anyhow::bail!(
        "this build of kite has no demo (it is built without the `demo` feature, as production images are); \
         run it from a source checkout with `cargo run --release -p kite-bin -- demo`"
    )
}
