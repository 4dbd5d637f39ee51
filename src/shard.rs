//! Which part of a long run one process does: `--shard K/N` by hand, or `--shard env/N` with K
//! taken from the batch system that started the process.
//!
//! A run that is cut into shards (data generation, an arena match) plays the same games whatever
//! the cut: a shard only chooses which of them this process plays. Batch systems give each of
//! their copies an index in the environment: Kubernetes Indexed Jobs set `JOB_COMPLETION_INDEX`
//! (0 to completions − 1), Slurm job arrays `SLURM_ARRAY_TASK_ID` (within `--array=MIN-MAX`,
//! with `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_COUNT` beside it). Both become the 1-based
//! K here, so a Job manifest or an array script needs no arithmetic of its own.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The whole run in one process.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Shard `index` of `count`; `None` unless 1 ≤ index ≤ count.
    pub fn new(index: u64, count: u64) -> Option<Shard> {
        (count >= 1 && (1..=count).contains(&index)).then_some(Shard { index, count })
    }

    /// This shard's contiguous range of a run of `items` (data generation: shard files in order
    /// concatenate into the run's file).
    pub fn range(self, items: u64) -> std::ops::Range<u64> {
        let at = |k: u64| ((u128::from(items) * u128::from(k)) / u128::from(self.count)) as u64;
        at(self.index - 1)..at(self.index)
    }

    /// Whether item `item` of a run is this shard's when items are dealt out in turn (the arena:
    /// every shard gets a share of every pairing).
    pub fn deals(self, item: u64) -> bool {
        item % self.count == self.index - 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(text: &str) -> Result<Shard, String> {
        text.split_once('/')
            .and_then(|(k, n)| Shard::new(k.trim().parse().ok()?, n.trim().parse().ok()?))
            .ok_or_else(|| {
                format!(
                    "{text:?} is not K/N with 1 <= K <= N (e.g. 2/4: the second of four shards)"
                )
            })
    }
}

/// `--shard` as given: a shard, or "the index from the environment" with the count given or
/// (Slurm) taken from the environment too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardArg {
    Given(Shard),
    FromEnv { count: Option<u64> },
}

impl Default for ShardArg {
    fn default() -> Self {
        ShardArg::Given(Shard::WHOLE)
    }
}

impl FromStr for ShardArg {
    type Err = String;
    fn from_str(text: &str) -> Result<ShardArg, String> {
        let text = text.trim();
        if text == "env" {
            return Ok(ShardArg::FromEnv { count: None });
        }
        if let Some(count) = text.strip_prefix("env/") {
            return match count.trim().parse::<u64>() {
                Ok(count) if count >= 1 => Ok(ShardArg::FromEnv { count: Some(count) }),
                _ => Err(format!(
                    "{text:?}: the count after env/ must be a whole number of at least 1"
                )),
            };
        }
        text.parse::<Shard>().map(ShardArg::Given).map_err(|e| {
            format!("{e}, or env/N to take K from JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID")
        })
    }
}

/// The batch system variables read, in the order tried.
pub const KUBERNETES_INDEX: &str = "JOB_COMPLETION_INDEX";
pub const SLURM_INDEX: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_MIN: &str = "SLURM_ARRAY_TASK_MIN";
pub const SLURM_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";

impl ShardArg {
    /// The shard this process plays; `env` reads the variable named by `var` (the process
    /// environment in use, a map in tests). The error says which variable was missing or wrong.
    pub fn resolve(self, var: impl Fn(&str) -> Option<String>) -> Result<Shard, String> {
        let count_given = match self {
            ShardArg::Given(shard) => return Ok(shard),
            ShardArg::FromEnv { count } => count,
        };
        let number = |name: &str| -> Result<Option<u64>, String> {
            match var(name) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                    format!("{name}={v:?} is not a whole number (--shard env reads it)")
                }),
            }
        };
        let (index, count) = if let Some(zero_based) = number(KUBERNETES_INDEX)? {
            let count = count_given.ok_or_else(|| {
                format!(
                    "{KUBERNETES_INDEX} is set but Kubernetes does not tell the number of \
                     completions: give it as --shard env/N"
                )
            })?;
            (zero_based + 1, count)
        } else if let Some(id) = number(SLURM_INDEX)? {
            let min = number(SLURM_MIN)?.unwrap_or(0);
            let index = id
                .checked_sub(min)
                .ok_or_else(|| format!("{SLURM_INDEX}={id} is below {SLURM_MIN}={min}"))?
                + 1;
            let count = match (count_given, number(SLURM_COUNT)?) {
                (Some(given), Some(slurm)) if given != slurm => {
                    return Err(format!(
                        "--shard env/{given} but the Slurm array has {SLURM_COUNT}={slurm} tasks"
                    ));
                }
                (Some(n), _) | (None, Some(n)) => n,
                (None, None) => {
                    return Err(format!("{SLURM_COUNT} is not set: give --shard env/N"));
                }
            };
            (index, count)
        } else {
            return Err(format!(
                "--shard env: neither {KUBERNETES_INDEX} (Kubernetes Indexed Job) nor \
                 {SLURM_INDEX} (Slurm job array) is set"
            ));
        };
        Shard::new(index, count).ok_or_else(|| {
            format!(
                "the batch system's index makes shard {index} of {count}, outside 1..={count} \
                 (an array of more tasks than --shard env/N says?)"
            )
        })
    }

    /// [`resolve`](Self::resolve) against this process's environment.
    pub fn resolve_from_process(self) -> Result<Shard, String> {
        self.resolve(|name| std::env::var(name).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn contiguous_ranges_cover_the_run_in_order() {
        let parts: Vec<_> = (1..=3)
            .map(|k| Shard::new(k, 3).unwrap().range(10))
            .collect();
        assert_eq!(parts, vec![0..3, 3..6, 6..10]);
        assert_eq!(Shard::WHOLE.range(10), 0..10);
        let dealt: Vec<u64> = (0..7)
            .filter(|&i| Shard::new(2, 3).unwrap().deals(i))
            .collect();
        assert_eq!(dealt, vec![1, 4]);
    }

    #[test]
    fn parses_given_and_env_forms_and_refuses_nonsense() {
        assert_eq!("2/3".parse::<Shard>(), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "x/3", "3", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
            assert!(bad.parse::<ShardArg>().is_err(), "{bad}");
        }
        assert_eq!(
            "env/16".parse::<ShardArg>(),
            Ok(ShardArg::FromEnv { count: Some(16) })
        );
        assert_eq!(
            "env".parse::<ShardArg>(),
            Ok(ShardArg::FromEnv { count: None })
        );
        assert!("env/0".parse::<ShardArg>().is_err());
    }

    #[test]
    fn kubernetes_index_is_zero_based() {
        let arg = ShardArg::FromEnv { count: Some(4) };
        assert_eq!(
            arg.resolve(env(&[(KUBERNETES_INDEX, "0")])),
            Ok(Shard { index: 1, count: 4 })
        );
        assert_eq!(
            arg.resolve(env(&[(KUBERNETES_INDEX, "3")])),
            Ok(Shard { index: 4, count: 4 })
        );
        assert!(arg.resolve(env(&[(KUBERNETES_INDEX, "4")])).is_err());
        let no_count = ShardArg::FromEnv { count: None }
            .resolve(env(&[(KUBERNETES_INDEX, "0")]))
            .unwrap_err();
        assert!(no_count.contains("env/N"), "{no_count}");
    }

    #[test]
    fn slurm_index_counts_from_the_arrays_minimum() {
        let one_based = env(&[(SLURM_INDEX, "1"), (SLURM_MIN, "1"), (SLURM_COUNT, "8")]);
        assert_eq!(
            ShardArg::FromEnv { count: None }.resolve(one_based),
            Ok(Shard { index: 1, count: 8 })
        );
        let zero_based = env(&[(SLURM_INDEX, "7"), (SLURM_MIN, "0"), (SLURM_COUNT, "8")]);
        assert_eq!(
            ShardArg::FromEnv { count: Some(8) }.resolve(zero_based),
            Ok(Shard { index: 8, count: 8 })
        );
        let disagree = env(&[(SLURM_INDEX, "0"), (SLURM_MIN, "0"), (SLURM_COUNT, "8")]);
        assert!(
            ShardArg::FromEnv { count: Some(4) }
                .resolve(disagree)
                .is_err()
        );
    }

    #[test]
    fn env_without_a_batch_system_is_a_clear_error() {
        let e = ShardArg::FromEnv { count: Some(2) }
            .resolve(env(&[]))
            .unwrap_err();
        assert!(
            e.contains(KUBERNETES_INDEX) && e.contains(SLURM_INDEX),
            "{e}"
        );
        let bad = ShardArg::FromEnv { count: Some(2) }
            .resolve(env(&[(KUBERNETES_INDEX, "one")]))
            .unwrap_err();
        assert!(bad.contains("not a whole number"), "{bad}");
        assert_eq!(
            ShardArg::Given(Shard::WHOLE).resolve(env(&[(KUBERNETES_INDEX, "5")])),
            Ok(Shard::WHOLE)
        );
    }
}
