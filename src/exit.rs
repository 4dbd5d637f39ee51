//! How the `ladder` binary ends, as a person at a terminal sees it: an error is one headline
//! that says what went wrong (each cause once, joined into it) followed by what to do about it
//! (`fix:` lines), with no Rust backtrace; and output cut short by a closed pipe
//! (`ladder levels | head -3`) ends the program quietly instead of with a panic.

/// The line that introduces what to do about an error, inside an error's message: everything
/// after it is the fix, printed after the headline.
pub const FIX: &str = "\n  fix: ";

/// `message` with what to do about it, as an error [`report`] prints on its own line.
pub fn with_fix(message: impl std::fmt::Display, fix: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{message}{FIX}{fix}")
}

/// The text printed for an error that ends a command: `error: <headline>` where the headline
/// is the error and each of its causes not already said in it, joined with `: `, then a
/// `  fix: …` line for each fix the chain carries.
pub fn report(error: &anyhow::Error) -> String {
    let mut headline = String::new();
    let mut fixes: Vec<String> = Vec::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let (said, fix) = match text.split_once(FIX) {
            Some((said, fix)) => (said.trim().to_string(), Some(fix.trim().to_string())),
            None => (text.trim().to_string(), None),
        };
        if let Some(fix) = fix.filter(|f| !fixes.contains(f)) {
            fixes.push(fix);
        }
        if said.is_empty() || headline.contains(&said) {
            continue;
        }
        if !headline.is_empty() {
            headline.push_str(": ");
        }
        headline.push_str(&said);
    }
    let mut out = format!("error: {headline}");
    for fix in fixes {
        out.push_str(FIX);
        out.push_str(&fix);
    }
    out
}

/// Makes a write to a closed stdout end the process quietly with status 0 (the reader took
/// what it wanted), where `println!` would panic. Every other panic is reported as before.
pub fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // A formatted panic message is not a `String` payload in the hook: ask for the text.
        let message = info
            .payload_as_str()
            .map_or_else(|| info.to_string(), str::to_string);
        if is_broken_stdout(&message) {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Whether a panic's message is the standard library's "failed printing to stdout: Broken
/// pipe".
fn is_broken_stdout(message: &str) -> bool {
    // The OS error reads "Broken pipe (os error 32)"; the bare kind "broken pipe".
    message.contains("failed printing to stdout") && message.to_lowercase().contains("broken pipe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_says_each_cause_once_and_the_fix_last() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = anyhow::Error::new(io).context("cannot read x.toml: No such file");
        assert_eq!(report(&e), "error: cannot read x.toml: No such file");
        let e = anyhow::anyhow!("invalid board part")
            .context(with_fix("bad FEN \"x\"", "give the whole FEN in quotes"));
        assert_eq!(
            report(&e),
            "error: bad FEN \"x\": invalid board part\n  fix: give the whole FEN in quotes"
        );
    }

    #[test]
    fn only_a_closed_stdout_is_quiet() {
        let broken = "Broken pipe (os error 32)";
        assert!(is_broken_stdout(&format!(
            "failed printing to stdout: {broken}"
        )));
        assert!(!is_broken_stdout("index out of bounds"));
        assert!(!is_broken_stdout(&format!(
            "failed printing to stderr: {broken}"
        )));
    }
}
