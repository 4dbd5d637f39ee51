//! The anchors of the rating scale (`calibration/anchors.toml`): every player of known strength
//! the arena, calibration and the sandbox's challengers can field by name (built-in movers,
//! Fairy-Stockfish emulating Lichess's AI levels, Stockfish `UCI_Elo`), how each is built, and
//! its rating on the declared scale with its standard error and provenance.
//!
//! This module owns the file: loading it with errors that name the file, line and key, and
//! writing it back. The games between anchors and the fit that rates them are the arena's
//! (`arena/anchor_fit.rs`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::player::seat::{MoveLimits, MoverStyle, PlayerKind};
use crate::player::uci_engine::EngineCommand;
use crate::toml_file::FileText;

/// The file that ships with the crate.
pub const BUILTIN_TOML: &str = include_str!("../calibration/anchors.toml");

/// The anchors file.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorsFile {
    /// The scale the ratings are on (e.g. `lichess-blitz`).
    pub scale: String,
    /// Uncertainty (1 sd) of the scale's offset, common to every anchor: from the pins.
    pub scale_sd: Option<f64>,
    /// How the ratings were obtained.
    pub fit: Option<FitProvenance>,
    pub pins: Vec<Pin>,
    pub anchors: Vec<Anchor>,
}

/// Where the ratings came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitProvenance {
    /// `YYYY-MM-DD` of the fit.
    pub date: String,
    /// Games between anchors in the fit.
    pub games: u64,
    /// The command that played the games.
    #[serde(default)]
    pub tournament: String,
    /// The command that fitted them.
    #[serde(default)]
    pub command: String,
    /// The results files fitted.
    #[serde(default)]
    pub results: Vec<String>,
    /// Binary and machine the games were played with.
    #[serde(default)]
    pub machine: String,
}

/// An anchor whose rating on the scale is declared from an outside source.
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub anchor: String,
    pub rating: f64,
    /// One standard deviation.
    pub sd: f64,
    pub source: String,
}

/// One anchor.
#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    pub name: String,
    /// How the arena builds it: a built-in mover or an external engine, never one of our
    /// levels (the file has no key for one, and the levels are what the anchors measure).
    pub kind: PlayerKind,
    pub fitted: Fitted,
    pub note: Option<String>,
}

/// What the last fit of the games between the anchors gave one anchor (each absent: not yet
/// fitted).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fitted {
    /// Rating on the file's scale.
    pub rating: Option<f64>,
    /// Standard error of the rating from the games, relative to the pins (the scale's own
    /// uncertainty is `scale_sd`).
    pub se: Option<f64>,
    /// Games this anchor played in the fit.
    pub games: Option<u64>,
}

/// A problem with an anchors file; always names the file and the line.
pub type AnchorsError = crate::toml_file::FileError;

impl AnchorsFile {
    /// The shipped file.
    pub fn builtin() -> AnchorsFile {
        AnchorsFile::parse(BUILTIN_TOML, "built-in calibration/anchors.toml")
            .expect("the shipped anchors file is valid")
    }

    pub fn load(path: &Path) -> Result<AnchorsFile, AnchorsError> {
        crate::toml_file::load(path, AnchorsFile::parse)
    }

    /// Parses and validates `text`; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<AnchorsFile, AnchorsError> {
        let raw: RawFile = crate::toml_file::parse_toml(text, origin)?;
        Validator {
            file: FileText { text, origin },
        }
        .build(raw)
    }

    pub fn get(&self, name: &str) -> Option<&Anchor> {
        self.anchors.iter().find(|a| a.name == name)
    }

    /// The anchors' names, in the order of the file.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.anchors.iter().map(|a| a.name.as_str())
    }

    /// The anchors named in `lists` (comma-separated names, `all` for every one), in the order
    /// of the file, each once.
    pub fn select(&self, lists: &[String]) -> Result<Vec<&Anchor>, String> {
        let mut wanted: HashSet<&str> = HashSet::new();
        for name in lists.iter().flat_map(|l| l.split(',')).map(str::trim) {
            if name.is_empty() {
                continue;
            }
            if name == "all" {
                wanted.extend(self.names());
            } else if self.get(name).is_some() {
                wanted.insert(name);
            } else {
                let known = self.names().collect::<Vec<_>>().join(", ");
                return Err(format!("no anchor named {name:?} (known: {known})"));
            }
        }
        Ok(self
            .anchors
            .iter()
            .filter(|a| wanted.contains(a.name.as_str()))
            .collect())
    }

    /// The file as TOML, with a header saying what it is; [`AnchorsFile::parse`] reads it back
    /// unchanged. Free text lives in fields (`source`, `note`), so nothing is lost on rewrite.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        write_header(&mut out);
        let _ = writeln!(out, "scale = {}", toml_str(&self.scale));
        if let Some(sd) = self.scale_sd {
            let _ = writeln!(out, "scale_sd = {}", toml_num(sd));
        }
        if let Some(fit) = &self.fit {
            write_fit(&mut out, fit);
        }
        for pin in &self.pins {
            write_pin(&mut out, pin);
        }
        for anchor in &self.anchors {
            write_anchor(&mut out, anchor);
        }
        out
    }
}

/// The comment heading the file: what it is, where its ratings come from, that it is rewritten.
fn write_header(out: &mut String) {
    let _ = writeln!(
        out,
        "# Anchors of the rating scale: every player the arena can field by name \
         (`ladder arena --anchor NAME`),\n\
         # how it is built, and its rating on the declared scale. Ratings come from a joint \
         maximum-likelihood\n\
         # fit of games between the anchors (`ladder arena --fit-anchors`), pinned to the \
         scale at the [[pin]]\n\
         # points: the games fix the differences, the pins only the common offset. `se` is \
         the standard error\n\
         # from the games (relative to the pins); `scale_sd` is the uncertainty of the \
         offset itself, shared by\n\
         # every anchor. See calibration/ANCHORS.md. This file is rewritten by \
         `--update-anchors`: keep notes\n\
         # in the `note` and `source` fields, not in comments.\n"
    );
}

/// The `[fit]` table: how the ratings were obtained.
fn write_fit(out: &mut String, fit: &FitProvenance) {
    let _ = writeln!(out, "\n[fit]");
    let _ = writeln!(out, "date = {}", toml_str(&fit.date));
    let _ = writeln!(out, "games = {}", fit.games);
    let _ = writeln!(out, "tournament = {}", toml_str(&fit.tournament));
    let _ = writeln!(out, "command = {}", toml_str(&fit.command));
    let _ = writeln!(out, "results = [{}]", toml_strs(&fit.results));
    let _ = writeln!(out, "machine = {}", toml_str(&fit.machine));
}

/// One `[[pin]]` table.
fn write_pin(out: &mut String, pin: &Pin) {
    let _ = writeln!(out, "\n[[pin]]");
    let _ = writeln!(out, "anchor = {}", toml_str(&pin.anchor));
    let _ = writeln!(out, "rating = {}", toml_num(pin.rating));
    let _ = writeln!(out, "sd = {}", toml_num(pin.sd));
    let _ = writeln!(out, "source = {}", toml_str(&pin.source));
}

/// One `[[anchor]]` table: its name, how it is built, then what the fit gave it.
fn write_anchor(out: &mut String, a: &Anchor) {
    let _ = writeln!(out, "\n[[anchor]]");
    let _ = writeln!(out, "name = {}", toml_str(&a.name));
    match &a.kind {
        PlayerKind::Mover(style) => {
            let _ = writeln!(out, "kind = {}", toml_str(style.name()));
        }
        PlayerKind::Uci { command, limits } => write_uci(out, command, limits),
        PlayerKind::Level(_) => unreachable!("an anchors file never holds a level"),
    }
    if let Some(r) = a.fitted.rating {
        let _ = writeln!(out, "rating = {}", toml_num(r.round()));
    }
    if let Some(se) = a.fitted.se {
        let _ = writeln!(out, "se = {}", toml_num(se.round()));
    }
    if let Some(g) = a.fitted.games {
        let _ = writeln!(out, "games = {g}");
    }
    if let Some(note) = &a.note {
        let _ = writeln!(out, "note = {}", toml_str(note));
    }
}

/// The keys of a UCI anchor: the engine, its arguments and options, its per-move limits.
fn write_uci(out: &mut String, command: &EngineCommand, limits: &MoveLimits) {
    let _ = writeln!(out, "kind = \"uci\"");
    let _ = writeln!(
        out,
        "command = {}",
        toml_str(&command.program.display().to_string())
    );
    if !command.args.is_empty() {
        let _ = writeln!(out, "args = [{}]", toml_strs(&command.args));
    }
    if !command.options.is_empty() {
        let _ = writeln!(
            out,
            "options = {{ {} }}",
            command
                .options
                .iter()
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_str(v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(n) = limits.nodes {
        let _ = writeln!(out, "nodes = {n}");
    }
    if let Some(d) = limits.depth {
        let _ = writeln!(out, "depth = {d}");
    }
    if let Some(ms) = limits.movetime_ms {
        let _ = writeln!(out, "movetime_ms = {ms}");
    }
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The items of a TOML array of strings, comma-separated (without the brackets).
fn toml_strs(items: &[String]) -> String {
    items
        .iter()
        .map(|x| toml_str(x))
        .collect::<Vec<_>>()
        .join(", ")
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml_str(k)
    }
}

fn toml_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

// ---- The file as written, spans kept for the errors. ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    scale: Spanned<String>,
    #[serde(default)]
    scale_sd: Option<Spanned<f64>>,
    #[serde(default)]
    fit: Option<FitProvenance>,
    #[serde(default)]
    pin: Vec<Spanned<RawPin>>,
    #[serde(default)]
    anchor: Vec<Spanned<RawAnchor>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPin {
    anchor: Spanned<String>,
    rating: Spanned<f64>,
    sd: Spanned<f64>,
    source: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnchor {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    command: Option<Spanned<String>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    options: Option<Spanned<BTreeMap<String, toml::Value>>>,
    #[serde(default)]
    nodes: Option<Spanned<i64>>,
    #[serde(default)]
    depth: Option<Spanned<i64>>,
    #[serde(default)]
    movetime_ms: Option<Spanned<i64>>,
    #[serde(default)]
    rating: Option<Spanned<f64>>,
    #[serde(default)]
    se: Option<Spanned<f64>>,
    #[serde(default)]
    games: Option<Spanned<i64>>,
    #[serde(default)]
    note: Option<String>,
}

/// Turns the file as written into an [`AnchorsFile`], checking every value where its span is
/// known.
struct Validator<'a> {
    file: FileText<'a>,
}

impl Validator<'_> {
    /// A per-move limit (`nodes`, `depth`, `movetime_ms`): absent, or at least 1.
    fn limit(&self, value: &Option<Spanned<i64>>, key: &str) -> Result<Option<u64>, AnchorsError> {
        match value {
            None => Ok(None),
            Some(v) if *v.get_ref() < 1 => self.file.invalid(v.span(), key, "must be at least 1"),
            Some(v) => Ok(Some(*v.get_ref() as u64)),
        }
    }

    /// The whole file: the scale, every `[[anchor]]` in order, then the `[[pin]]`s (which name
    /// anchors of the file).
    fn build(&self, raw: RawFile) -> Result<AnchorsFile, AnchorsError> {
        self.check_scale(&raw.scale, &raw.scale_sd)?;
        let mut anchors: Vec<Anchor> = Vec::new();
        for (i, spanned) in raw.anchor.iter().enumerate() {
            let anchor = self.anchor(i, spanned, &anchors)?;
            anchors.push(anchor);
        }
        let pins = raw
            .pin
            .iter()
            .enumerate()
            .map(|(i, spanned)| self.pin(i, spanned, &anchors))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AnchorsFile {
            scale: raw.scale.get_ref().trim().to_string(),
            scale_sd: raw.scale_sd.map(|s| *s.get_ref()),
            fit: raw.fit,
            pins,
            anchors,
        })
    }

    /// `scale` names one; `scale_sd`, if given, is an uncertainty.
    fn check_scale(
        &self,
        scale: &Spanned<String>,
        scale_sd: &Option<Spanned<f64>>,
    ) -> Result<(), AnchorsError> {
        if scale.get_ref().trim().is_empty() {
            return self
                .file
                .invalid(scale.span(), "scale", "must name the scale");
        }
        if let Some(sd) = scale_sd
            && !(sd.get_ref().is_finite() && *sd.get_ref() >= 0.0)
        {
            return self
                .file
                .invalid(sd.span(), "scale_sd", "must be zero or positive");
        }
        Ok(())
    }

    /// Anchor `i`: its name (not one of the `before` it), how it is built, and its fit.
    fn anchor(
        &self,
        i: usize,
        spanned: &Spanned<RawAnchor>,
        before: &[Anchor],
    ) -> Result<Anchor, AnchorsError> {
        let a = spanned.get_ref();
        let key = |k: &str| format!("anchor[{i}].{k}");
        let name = self.anchor_name(&a.name, &key("name"), before)?;
        let limits = MoveLimits {
            nodes: self.limit(&a.nodes, &key("nodes"))?,
            depth: self
                .limit(&a.depth, &key("depth"))?
                .map(|d| d.min(u32::MAX as u64) as u32),
            movetime_ms: self.limit(&a.movetime_ms, &key("movetime_ms"))?,
        };
        let kind = match a.kind.get_ref().as_str() {
            "random" => self.mover(MoverStyle::Random, spanned, &limits, key)?,
            "greedy" => self.mover(MoverStyle::Greedy, spanned, &limits, key)?,
            "uci" => self.uci(spanned, limits, key)?,
            other => {
                return self.file.invalid(
                    a.kind.span(),
                    &key("kind"),
                    format!("unknown kind {other:?} (expected random, greedy or uci)"),
                );
            }
        };
        let fitted = self.fitted(a, key)?;
        Ok(Anchor {
            name,
            kind,
            fitted,
            note: a.note.clone(),
        })
    }

    /// A name the command line can give (`--anchor a,b`), not a level's, not taken `before`.
    fn anchor_name(
        &self,
        raw: &Spanned<String>,
        key: &str,
        before: &[Anchor],
    ) -> Result<String, AnchorsError> {
        let name = raw.get_ref().trim().to_string();
        if name.is_empty()
            || name == "all"
            || name.contains([',', '=', ' '])
            || name.starts_with("level-")
        {
            return self.file.invalid(
                raw.span(),
                key,
                "must be a non-empty name without spaces, ',' or '=' (and not `all` or level-N)",
            );
        }
        if before.iter().any(|b| b.name == name) {
            return self
                .file
                .invalid(raw.span(), key, format!("{name:?} appears twice"));
        }
        Ok(name)
    }

    /// A built-in mover: no engine, no options, no per-move limits.
    fn mover(
        &self,
        style: MoverStyle,
        spanned: &Spanned<RawAnchor>,
        limits: &MoveLimits,
        key: impl Fn(&str) -> String,
    ) -> Result<PlayerKind, AnchorsError> {
        let a = spanned.get_ref();
        if let Some(c) = &a.command {
            return self
                .file
                .invalid(c.span(), &key("command"), "a built-in mover runs no engine");
        }
        if let Some(o) = &a.options {
            return self
                .file
                .invalid(o.span(), &key("options"), "a built-in mover has no options");
        }
        if !limits.is_empty() {
            return self.file.invalid(
                spanned.span(),
                &key("nodes"),
                "a built-in mover takes no per-move limits",
            );
        }
        Ok(PlayerKind::Mover(style))
    }

    /// A UCI engine: its path, a per-move limit (so its strength is its own), its options.
    fn uci(
        &self,
        spanned: &Spanned<RawAnchor>,
        limits: MoveLimits,
        key: impl Fn(&str) -> String,
    ) -> Result<PlayerKind, AnchorsError> {
        let a = spanned.get_ref();
        let Some(command) = &a.command else {
            return self.file.invalid(
                spanned.span(),
                &key("command"),
                "a uci anchor needs the engine's path",
            );
        };
        if command.get_ref().trim().is_empty() {
            return self
                .file
                .invalid(command.span(), &key("command"), "is empty");
        }
        if limits.is_empty() {
            return self.file.invalid(
                a.kind.span(),
                &key("nodes"),
                "a uci anchor needs a per-move limit (nodes, depth or movetime_ms) \
                 so its strength does not depend on the match",
            );
        }
        Ok(PlayerKind::Uci {
            command: EngineCommand {
                program: PathBuf::from(command.get_ref().trim()),
                args: a.args.clone(),
                options: self.uci_options(&a.options, &key)?,
            },
            limits,
        })
    }

    /// A UCI anchor's `options` as the text `setoption` sends (strings, numbers or booleans).
    fn uci_options(
        &self,
        raw: &Option<Spanned<BTreeMap<String, toml::Value>>>,
        key: impl Fn(&str) -> String,
    ) -> Result<Vec<(String, String)>, AnchorsError> {
        let mut options = Vec::new();
        if let Some(o) = raw {
            for (name, value) in o.get_ref() {
                let text = match value {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    toml::Value::Float(x) => x.to_string(),
                    toml::Value::Boolean(b) => b.to_string(),
                    _ => {
                        return self.file.invalid(
                            o.span(),
                            &key(&format!("options.{name}")),
                            "must be a string, number or boolean",
                        );
                    }
                };
                options.push((name.clone(), text));
            }
        }
        Ok(options)
    }

    /// What a fit gave the anchor: its rating, the rating's standard error and its games.
    fn fitted(&self, a: &RawAnchor, key: impl Fn(&str) -> String) -> Result<Fitted, AnchorsError> {
        let rating = match &a.rating {
            Some(r) if !r.get_ref().is_finite() => {
                return self
                    .file
                    .invalid(r.span(), &key("rating"), "must be a finite number");
            }
            r => r.as_ref().map(|r| *r.get_ref()),
        };
        let se = match &a.se {
            Some(s) if !(s.get_ref().is_finite() && *s.get_ref() >= 0.0) => {
                return self
                    .file
                    .invalid(s.span(), &key("se"), "must be zero or positive");
            }
            Some(s) if rating.is_none() => {
                return self
                    .file
                    .invalid(s.span(), &key("se"), "given without a rating");
            }
            s => s.as_ref().map(|s| *s.get_ref()),
        };
        let games = match &a.games {
            Some(g) if *g.get_ref() < 0 => {
                return self
                    .file
                    .invalid(g.span(), &key("games"), "must be zero or positive");
            }
            g => g.as_ref().map(|g| *g.get_ref() as u64),
        };
        Ok(Fitted { rating, se, games })
    }

    /// Pin `i`: an anchor of this file, a finite rating, a positive sd and a source.
    fn pin(
        &self,
        i: usize,
        spanned: &Spanned<RawPin>,
        anchors: &[Anchor],
    ) -> Result<Pin, AnchorsError> {
        let p = spanned.get_ref();
        let key = |k: &str| format!("pin[{i}].{k}");
        let anchor = p.anchor.get_ref().trim().to_string();
        if !anchors.iter().any(|a| a.name == anchor) {
            return self.file.invalid(
                p.anchor.span(),
                &key("anchor"),
                format!("no anchor named {anchor:?} in this file"),
            );
        }
        if !p.rating.get_ref().is_finite() {
            return self
                .file
                .invalid(p.rating.span(), &key("rating"), "must be a finite number");
        }
        if !(p.sd.get_ref().is_finite() && *p.sd.get_ref() > 0.0) {
            return self.file.invalid(
                p.sd.span(),
                &key("sd"),
                "must be positive (no pin is exact)",
            );
        }
        if p.source.get_ref().trim().is_empty() {
            return self.file.invalid(
                p.source.span(),
                &key("source"),
                "must say where the rating comes from",
            );
        }
        Ok(Pin {
            anchor,
            rating: *p.rating.get_ref(),
            sd: *p.sd.get_ref(),
            source: p.source.get_ref().clone(),
        })
    }
}
