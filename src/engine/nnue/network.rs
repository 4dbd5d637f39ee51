//! The quantised network's weights, its file format, and the integer forward pass.
//!
//! File format (little-endian), version 1:
//!
//! ```text
//! magic   8 bytes  "LADDERNN"
//! version u32      1
//! hidden  u32      N, the size of each accumulator (1..=4096)
//! feature weights  768 × N i16   row by row: input i's N weights at [i·N, (i+1)·N)
//! feature bias     N i16
//! output weights   2N i16        the side to move's N, then the other side's N
//! output bias      i32           in units of QA · QB
//! checksum u64     FNV-1a 64 of every byte before it
//! ```
//!
//! Every weight must lie where the integer pass cannot overflow: feature weights and biases
//! within ±[`FEATURE_WEIGHT_LIMIT`] (33 of them fit an i16 accumulator), output weights within
//! ±[`OUTPUT_WEIGHT_LIMIT`] (a clipped activation times one fits an i16).

use super::features::INPUTS;

/// The first layer's quantisation: a float weight w is stored as round(w · QA).
pub const QA: i32 = 255;
/// The output layer's quantisation: a float weight w is stored as round(w · QB).
pub const QB: i32 = 64;
/// The network's output times this is centipawns (and the trainer's sigmoid divides by it).
pub const SCALE: i32 = 400;
/// The trainer keeps every float weight within ± this, as bullet does, so the quantised
/// output weights fit in ±127 and QA · weight products fit in i16.
pub const WEIGHT_CLIP: f32 = 1.98;

const MAGIC: &[u8; 8] = b"LADDERNN";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const CHECKSUM_LEN: usize = 8;
/// The largest hidden size a file may declare.
pub const MAX_HIDDEN: usize = 4096;
/// |feature weight| and |feature bias| at most this: 32 pieces and the bias never overflow i16.
pub const FEATURE_WEIGHT_LIMIT: i16 = i16::MAX / 33;
/// |output weight| at most this: QA times it fits an i16 (bullet's clip 1.98 · QB rounds to 127).
pub const OUTPUT_WEIGHT_LIMIT: i16 = 127;
/// Lanes summed in i32 before the running total widens to i64.
const CHUNK: usize = 16;

/// Why bytes are not a network this build can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error("not a network file: {len} bytes, shorter than the {HEADER_LEN}-byte header")]
    TooShort { len: usize },
    #[error("not a network file: it does not start with \"LADDERNN\"")]
    BadMagic,
    #[error("network format version {found}; this build reads version {FORMAT_VERSION}")]
    UnsupportedVersion { found: u32 },
    #[error("network hidden size {hidden} is not within 1..={MAX_HIDDEN}")]
    BadHidden { hidden: u64 },
    #[error(
        "network file of hidden size {hidden} should be {expected} bytes, is {found} \
         (cut short or padded)"
    )]
    WrongLength {
        hidden: usize,
        expected: usize,
        found: usize,
    },
    #[error("network file is corrupt: its checksum does not match its contents")]
    BadChecksum,
    #[error("network {what} {index} is {value}, outside ±{limit}")]
    WeightOutOfRange {
        what: &'static str,
        index: usize,
        value: i32,
        limit: i32,
    },
    #[error("network parts of the wrong size: {what} has {found} values, expected {expected}")]
    WrongPartSize {
        what: &'static str,
        found: usize,
        expected: usize,
    },
}

/// A quantised (768→N)×2→1 network with squared clipped ReLU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    hidden: usize,
    feature_weights: Vec<i16>,
    feature_bias: Vec<i16>,
    output_weights: Vec<i16>,
    output_bias: i32,
}

impl Network {
    /// A network from its quantised parts (layout as in the file), checked for size and range.
    pub fn from_parts(
        hidden: usize,
        feature_weights: Vec<i16>,
        feature_bias: Vec<i16>,
        output_weights: Vec<i16>,
        output_bias: i32,
    ) -> Result<Network, NetworkError> {
        if hidden == 0 || hidden > MAX_HIDDEN {
            return Err(NetworkError::BadHidden {
                hidden: hidden as u64,
            });
        }
        for (what, found, expected) in [
            ("feature weights", feature_weights.len(), INPUTS * hidden),
            ("feature bias", feature_bias.len(), hidden),
            ("output weights", output_weights.len(), 2 * hidden),
        ] {
            if found != expected {
                return Err(NetworkError::WrongPartSize {
                    what,
                    found,
                    expected,
                });
            }
        }
        for (what, values, limit) in [
            ("feature weight", &feature_weights, FEATURE_WEIGHT_LIMIT),
            ("feature bias", &feature_bias, FEATURE_WEIGHT_LIMIT),
            ("output weight", &output_weights, OUTPUT_WEIGHT_LIMIT),
        ] {
            if let Some((index, &value)) = values
                .iter()
                .enumerate()
                .find(|(_, v)| v.unsigned_abs() > limit.unsigned_abs())
            {
                return Err(NetworkError::WeightOutOfRange {
                    what,
                    index,
                    value: i32::from(value),
                    limit: i32::from(limit),
                });
            }
        }
        Ok(Network {
            hidden,
            feature_weights,
            feature_bias,
            output_weights,
            output_bias,
        })
    }

    /// Reads a network file's bytes; every way they can be wrong is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<Network, NetworkError> {
        if bytes.len() < HEADER_LEN {
            return Err(NetworkError::TooShort { len: bytes.len() });
        }
        if &bytes[..8] != MAGIC {
            return Err(NetworkError::BadMagic);
        }
        let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        if version != FORMAT_VERSION {
            return Err(NetworkError::UnsupportedVersion { found: version });
        }
        let hidden = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
        if hidden == 0 || hidden > MAX_HIDDEN {
            return Err(NetworkError::BadHidden {
                hidden: hidden as u64,
            });
        }
        let expected = file_len(hidden);
        if bytes.len() != expected {
            return Err(NetworkError::WrongLength {
                hidden,
                expected,
                found: bytes.len(),
            });
        }
        let (body, checksum) = bytes.split_at(expected - CHECKSUM_LEN);
        let mut stored = [0u8; 8];
        stored.copy_from_slice(checksum);
        if fnv1a64(body) != u64::from_le_bytes(stored) {
            return Err(NetworkError::BadChecksum);
        }
        let mut words = body[HEADER_LEN..]
            .chunks_exact(2)
            .map(|pair| i16::from_le_bytes([pair[0], pair[1]]));
        let mut take = |n: usize| words.by_ref().take(n).collect::<Vec<i16>>();
        let feature_weights = take(INPUTS * hidden);
        let feature_bias = take(hidden);
        let output_weights = take(2 * hidden);
        let tail = &body[body.len() - 4..];
        let output_bias = i32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
        Network::from_parts(
            hidden,
            feature_weights,
            feature_bias,
            output_weights,
            output_bias,
        )
    }

    /// The network's file: header, weights, checksum ([`Network::from_bytes`] reads it back).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(file_len(self.hidden));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(self.hidden as u32).to_le_bytes());
        for part in [
            &self.feature_weights,
            &self.feature_bias,
            &self.output_weights,
        ] {
            for value in part {
                bytes.extend_from_slice(&value.to_le_bytes());
            }
        }
        bytes.extend_from_slice(&self.output_bias.to_le_bytes());
        let checksum = fnv1a64(&bytes);
        bytes.extend_from_slice(&checksum.to_le_bytes());
        bytes
    }

    /// N, the size of each accumulator.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The N weights input `index` adds to an accumulator.
    #[inline]
    pub fn feature_row(&self, index: usize) -> &[i16] {
        &self.feature_weights[index * self.hidden..(index + 1) * self.hidden]
    }

    /// What every accumulator starts from.
    pub fn feature_bias(&self) -> &[i16] {
        &self.feature_bias
    }

    /// The output layer: the side to move's N weights, then the other side's N.
    pub fn output_weights(&self) -> &[i16] {
        &self.output_weights
    }

    /// The output bias, in units of QA · QB.
    pub fn output_bias(&self) -> i32 {
        self.output_bias
    }

    /// The evaluation in centipawns of the side whose accumulator is `ours` (the other side's
    /// is `theirs`).
    pub fn output(&self, ours: &[i16], theirs: &[i16]) -> i32 {
        let (our_weights, their_weights) = self.output_weights.split_at(self.hidden);
        let sum = screlu_dot(ours, our_weights) + screlu_dot(theirs, their_weights);
        // Σ c²·w is in QA²·QB; one QA off, the bias (QA·QB) on, then to centipawns.
        let output = (sum / i64::from(QA) + i64::from(self.output_bias)) * i64::from(SCALE)
            / i64::from(QA * QB);
        output.clamp(-i64::from(i16::MAX), i64::from(i16::MAX)) as i32
    }
}

/// Σ clamp(a, 0, QA)² · w, by the "lizard" ordering: clamp·w fits i16 (|w| ≤ 127), times
/// clamp again in i32; i32 sums over chunks of 16, i64 across chunks. The same plain Rust,
/// compiled a second time for AVX2 where the processor has it ([`super::simd`]): integer
/// arithmetic, so both give the same sum and the same search.
#[inline]
fn screlu_dot(accumulator: &[i16], weights: &[i16]) -> i64 {
    #[cfg(target_arch = "x86_64")]
    if super::simd::has_avx2() {
        #[allow(unsafe_code)]
        // SAFETY: the processor has AVX2 (checked just above), all that the function needs.
        return unsafe { screlu_dot_avx2(accumulator, weights) };
    }
    screlu_dot_plain(accumulator, weights)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn screlu_dot_avx2(accumulator: &[i16], weights: &[i16]) -> i64 {
    screlu_dot_plain(accumulator, weights)
}

#[inline(always)]
fn screlu_dot_plain(accumulator: &[i16], weights: &[i16]) -> i64 {
    let mut total = 0i64;
    for (values, weights) in accumulator.chunks(CHUNK).zip(weights.chunks(CHUNK)) {
        let mut sum = 0i32;
        for (&value, &weight) in values.iter().zip(weights) {
            let clipped = value.clamp(0, QA as i16);
            sum += i32::from(clipped * weight) * i32::from(clipped);
        }
        total += i64::from(sum);
    }
    total
}

fn file_len(hidden: usize) -> usize {
    HEADER_LEN + 2 * (INPUTS * hidden + hidden + 2 * hidden) + 4 + CHECKSUM_LEN
}

/// FNV-1a, 64 bits: enough to tell a damaged file from a whole one (the trainer's
/// checkpoints use it too).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A network of random weights within the limits, for tests here and in the trainer.
#[cfg(test)]
pub(crate) fn random_network(hidden: usize, seed: u64) -> Network {
    let mut rng = crate::seed::SplitMix::new(seed);
    let mut draw = |n: usize, limit: i16| -> Vec<i16> {
        let span = 2 * i64::from(limit) + 1;
        (0..n)
            .map(|_| ((rng.next_u64() % span as u64) as i64 - i64::from(limit)) as i16)
            .collect()
    };
    let feature_weights = draw(INPUTS * hidden, 200);
    let feature_bias = draw(hidden, 200);
    let output_weights = draw(2 * hidden, OUTPUT_WEIGHT_LIMIT);
    Network::from_parts(hidden, feature_weights, feature_bias, output_weights, 1234)
        .expect("random weights are within the limits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_reads_back_from_its_bytes() {
        let network = random_network(8, 1);
        let bytes = network.to_bytes();
        assert_eq!(bytes.len(), file_len(8));
        assert_eq!(Network::from_bytes(&bytes), Ok(network));
    }

    #[test]
    fn wrong_or_damaged_files_are_clear_errors() {
        let bytes = random_network(8, 2).to_bytes();
        assert_eq!(
            Network::from_bytes(&bytes[..10]),
            Err(NetworkError::TooShort { len: 10 })
        );
        assert_eq!(
            Network::from_bytes(b"# weights version 2\nmaterial 100 100\n"),
            Err(NetworkError::BadMagic)
        );
        let mut newer = bytes.clone();
        newer[8] = 2;
        assert_eq!(
            Network::from_bytes(&newer),
            Err(NetworkError::UnsupportedVersion { found: 2 })
        );
        let mut cut = bytes.clone();
        cut.pop();
        assert!(matches!(
            Network::from_bytes(&cut),
            Err(NetworkError::WrongLength { hidden: 8, .. })
        ));
        let mut flipped = bytes.clone();
        flipped[HEADER_LEN + 100] ^= 0x10;
        assert_eq!(
            Network::from_bytes(&flipped),
            Err(NetworkError::BadChecksum)
        );
        let mut huge = bytes.clone();
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Network::from_bytes(&huge),
            Err(NetworkError::BadHidden { .. })
        ));
        let message = NetworkError::BadChecksum.to_string();
        assert!(message.contains("corrupt"), "{message}");
    }

    #[test]
    fn weights_that_could_overflow_the_integer_pass_are_refused() {
        let hidden = 4;
        let mut output = vec![0i16; 2 * hidden];
        output[3] = 128;
        let refused =
            Network::from_parts(hidden, vec![0; INPUTS * hidden], vec![0; hidden], output, 0);
        assert_eq!(
            refused,
            Err(NetworkError::WeightOutOfRange {
                what: "output weight",
                index: 3,
                value: 128,
                limit: 127
            })
        );
        // A file with such a weight (and a valid checksum) is refused the same way.
        let mut features = vec![0i16; INPUTS * hidden];
        features[5] = -1000;
        let network = Network {
            hidden,
            feature_weights: features,
            feature_bias: vec![0; hidden],
            output_weights: vec![0; 2 * hidden],
            output_bias: 0,
        };
        assert!(matches!(
            Network::from_bytes(&network.to_bytes()),
            Err(NetworkError::WeightOutOfRange {
                what: "feature weight",
                index: 5,
                ..
            })
        ));
    }

    /// The dot product the search runs (AVX2 where the processor has it) is the plain loop's,
    /// at every width a file may have: whole chunks, a short last one, and the extremes of the
    /// activation and the weights.
    #[test]
    fn the_dispatched_dot_product_is_the_plain_one() {
        let mut rng = crate::seed::SplitMix::new(17);
        for hidden in [1, 15, 16, 17, 64, 256, 1000, MAX_HIDDEN] {
            let accumulator: Vec<i16> = (0..hidden)
                .map(|i| match i % 5 {
                    0 => i16::MIN,
                    1 => i16::MAX,
                    _ => rng.next_u64() as i16 % 400,
                })
                .collect();
            let weights: Vec<i16> = (0..hidden)
                .map(|i| match i % 3 {
                    0 => OUTPUT_WEIGHT_LIMIT,
                    1 => -OUTPUT_WEIGHT_LIMIT,
                    _ => (rng.next_u64() % 255) as i16 - 127,
                })
                .collect();
            assert_eq!(
                screlu_dot(&accumulator, &weights),
                screlu_dot_plain(&accumulator, &weights),
                "width {hidden}"
            );
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let bytes = random_network(2, 3).to_bytes();
        let mut rng = crate::seed::SplitMix::new(9);
        for _ in 0..2000 {
            let mut damaged = bytes.clone();
            let at = (rng.next_u64() as usize) % damaged.len();
            damaged[at] = rng.next_u64() as u8;
            let len = (rng.next_u64() as usize) % (damaged.len() + 1);
            let _ = Network::from_bytes(&damaged[..len]);
            let _ = Network::from_bytes(&damaged);
        }
    }
}
