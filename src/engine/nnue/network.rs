//! The quantised network's weights, its file format, and the integer forward pass.
//!
//! File format (little-endian), version 2:
//!
//! ```text
//! magic   8 bytes  "LADDERNN"
//! version u32      2
//! hidden  u32      N, the size of each accumulator (1..=4096)
//! buckets u32      B, output buckets by the number of pieces on the board (1..=16)
//! feature weights  768 × N i16   row by row: input i's N weights at [i·N, (i+1)·N)
//! feature bias     N i16
//! output weights   B × 2N i16    per bucket: the side to move's N, then the other side's N
//! output biases    B × i32       in units of QA · QB
//! checksum u64     FNV-1a 64 of every byte before it
//! ```
//!
//! Version 1 is the same without the `buckets` field, B = 1: a network of one bucket is
//! written as version 1, so the networks made before buckets keep their bytes.
//!
//! Output buckets (bullet's `MaterialCount`): the output layer used is chosen by how many
//! pieces are on the board, `(pieces − 2) · B / 32`, so an ending and a middlegame can weigh
//! the same accumulator differently; the accumulators are shared by all buckets.
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
/// The newest format version this build reads and writes (it reads every older one too).
pub const FORMAT_VERSION: u32 = 2;
/// The header of version 1 (magic, version, hidden); version 2 adds the buckets' u32.
const HEADER_LEN: usize = 16;
const CHECKSUM_LEN: usize = 8;
/// The largest hidden size a file may declare.
pub const MAX_HIDDEN: usize = 4096;
/// The most output buckets a file may declare.
pub const MAX_BUCKETS: usize = 16;
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
    #[error("network format version {found}; this build reads versions 1 to {FORMAT_VERSION}")]
    UnsupportedVersion { found: u32 },
    #[error("network hidden size {hidden} is not within 1..={MAX_HIDDEN}")]
    BadHidden { hidden: u64 },
    #[error("network output bucket count {buckets} is not within 1..={MAX_BUCKETS}")]
    BadBuckets { buckets: u64 },
    #[error(
        "network file of hidden size {hidden} and {buckets} output bucket(s) should be \
         {expected} bytes, is {found} (cut short or padded)"
    )]
    WrongLength {
        hidden: usize,
        buckets: usize,
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

/// The output bucket of a position with `pieces` pieces on the board (kings included), among
/// `buckets`: `(pieces − 2) · buckets / 32`, the last bucket for anything above.
#[inline]
pub fn output_bucket(pieces: usize, buckets: usize) -> usize {
    (pieces.saturating_sub(2) * buckets / 32).min(buckets - 1)
}

/// A quantised (768→N)×2→1 network with squared clipped ReLU and B output buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    hidden: usize,
    buckets: usize,
    feature_weights: Vec<i16>,
    feature_bias: Vec<i16>,
    output_weights: Vec<i16>,
    output_biases: Vec<i32>,
}

impl Network {
    /// A network from its quantised parts (layout as in the file), checked for size and range.
    pub fn from_parts(
        hidden: usize,
        buckets: usize,
        feature_weights: Vec<i16>,
        feature_bias: Vec<i16>,
        output_weights: Vec<i16>,
        output_biases: Vec<i32>,
    ) -> Result<Network, NetworkError> {
        check_shape(hidden, buckets)?;
        for (what, found, expected) in [
            ("feature weights", feature_weights.len(), INPUTS * hidden),
            ("feature bias", feature_bias.len(), hidden),
            ("output weights", output_weights.len(), buckets * 2 * hidden),
            ("output biases", output_biases.len(), buckets),
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
            buckets,
            feature_weights,
            feature_bias,
            output_weights,
            output_biases,
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
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let version = word(8);
        if version == 0 || version > FORMAT_VERSION {
            return Err(NetworkError::UnsupportedVersion { found: version });
        }
        let hidden = word(12) as usize;
        let header = header_len(version);
        if bytes.len() < header {
            return Err(NetworkError::TooShort { len: bytes.len() });
        }
        let buckets = if version == 1 {
            1
        } else {
            word(HEADER_LEN) as usize
        };
        // Before the length is computed from them.
        check_shape(hidden, buckets)?;
        let expected = file_len(header, hidden, buckets);
        if bytes.len() != expected {
            return Err(NetworkError::WrongLength {
                hidden,
                buckets,
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
        let biases_at = body.len() - 4 * buckets;
        let mut words = body[header..biases_at]
            .chunks_exact(2)
            .map(|pair| i16::from_le_bytes([pair[0], pair[1]]));
        let mut take = |n: usize| words.by_ref().take(n).collect::<Vec<i16>>();
        let feature_weights = take(INPUTS * hidden);
        let feature_bias = take(hidden);
        let output_weights = take(buckets * 2 * hidden);
        let output_biases = body[biases_at..]
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Network::from_parts(
            hidden,
            buckets,
            feature_weights,
            feature_bias,
            output_weights,
            output_biases,
        )
    }

    /// The network's file: header, weights, checksum ([`Network::from_bytes`] reads it back);
    /// version 1 for one bucket, version 2 for more.
    pub fn to_bytes(&self) -> Vec<u8> {
        let version: u32 = if self.buckets == 1 { 1 } else { 2 };
        let mut bytes =
            Vec::with_capacity(file_len(header_len(version), self.hidden, self.buckets));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&(self.hidden as u32).to_le_bytes());
        if version == 2 {
            bytes.extend_from_slice(&(self.buckets as u32).to_le_bytes());
        }
        for part in [
            &self.feature_weights,
            &self.feature_bias,
            &self.output_weights,
        ] {
            for value in part {
                bytes.extend_from_slice(&value.to_le_bytes());
            }
        }
        for bias in &self.output_biases {
            bytes.extend_from_slice(&bias.to_le_bytes());
        }
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

    /// B, the number of output buckets.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// The output layer of bucket `bucket`: the side to move's N weights, then the other
    /// side's N.
    pub fn output_weights(&self, bucket: usize) -> &[i16] {
        &self.output_weights[bucket * 2 * self.hidden..(bucket + 1) * 2 * self.hidden]
    }

    /// The output bias of bucket `bucket`, in units of QA · QB.
    pub fn output_bias(&self, bucket: usize) -> i32 {
        self.output_biases[bucket]
    }

    /// The evaluation in centipawns of the side whose accumulator is `ours` (the other side's
    /// is `theirs`), with `pieces` pieces on the board.
    pub fn output(&self, ours: &[i16], theirs: &[i16], pieces: usize) -> i32 {
        let bucket = output_bucket(pieces, self.buckets);
        let (our_weights, their_weights) = self.output_weights(bucket).split_at(self.hidden);
        let sum = screlu_dot(ours, our_weights) + screlu_dot(theirs, their_weights);
        // Σ c²·w is in QA²·QB; one QA off, the bias (QA·QB) on, then to centipawns.
        let output = (sum / i64::from(QA) + i64::from(self.output_biases[bucket]))
            * i64::from(SCALE)
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

/// The header's bytes in format `version`: version 2 adds the bucket count.
fn header_len(version: u32) -> usize {
    if version == 1 {
        HEADER_LEN
    } else {
        HEADER_LEN + 4
    }
}

fn file_len(header: usize, hidden: usize, buckets: usize) -> usize {
    header + 2 * (INPUTS * hidden + hidden + buckets * 2 * hidden) + 4 * buckets + CHECKSUM_LEN
}

/// The hidden size and bucket count a network may have.
fn check_shape(hidden: usize, buckets: usize) -> Result<(), NetworkError> {
    if hidden == 0 || hidden > MAX_HIDDEN {
        return Err(NetworkError::BadHidden {
            hidden: hidden as u64,
        });
    }
    if buckets == 0 || buckets > MAX_BUCKETS {
        return Err(NetworkError::BadBuckets {
            buckets: buckets as u64,
        });
    }
    Ok(())
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
    random_bucketed_network(hidden, 1, seed)
}

/// The same with `buckets` output buckets.
#[cfg(test)]
pub(crate) fn random_bucketed_network(hidden: usize, buckets: usize, seed: u64) -> Network {
    let mut rng = crate::seed::SplitMix::new(seed);
    let mut draw = |n: usize, limit: i16| -> Vec<i16> {
        let span = 2 * i64::from(limit) + 1;
        (0..n)
            .map(|_| ((rng.next_u64() % span as u64) as i64 - i64::from(limit)) as i16)
            .collect()
    };
    // (Arguments are evaluated in order: the feature weights are drawn first.)
    Network::from_parts(
        hidden,
        buckets,
        draw(INPUTS * hidden, 200),
        draw(hidden, 200),
        draw(buckets * 2 * hidden, OUTPUT_WEIGHT_LIMIT),
        (0..buckets as i32).map(|b| 1234 - 300 * b).collect(),
    )
    .expect("random weights are within the limits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_reads_back_from_its_bytes() {
        let network = random_network(8, 1);
        let bytes = network.to_bytes();
        assert_eq!(bytes.len(), file_len(HEADER_LEN, 8, 1));
        // One bucket is written as version 1, the format of the networks before buckets.
        assert_eq!(bytes[8..12], 1u32.to_le_bytes());
        assert_eq!(Network::from_bytes(&bytes), Ok(network));
        let bucketed = random_bucketed_network(8, 4, 1);
        let bytes = bucketed.to_bytes();
        assert_eq!(bytes.len(), file_len(HEADER_LEN + 4, 8, 4));
        assert_eq!(bytes[8..12], 2u32.to_le_bytes());
        assert_eq!(Network::from_bytes(&bytes), Ok(bucketed));
        // Version 2 with one bucket (not what this build writes, but the format allows it).
        let one = random_network(8, 1);
        let v1 = one.to_bytes();
        let mut v2 = MAGIC.to_vec();
        v2.extend_from_slice(&2u32.to_le_bytes());
        v2.extend_from_slice(&v1[12..16]);
        v2.extend_from_slice(&1u32.to_le_bytes());
        v2.extend_from_slice(&v1[HEADER_LEN..v1.len() - CHECKSUM_LEN]);
        let checksum = fnv1a64(&v2);
        v2.extend_from_slice(&checksum.to_le_bytes());
        assert_eq!(Network::from_bytes(&v2), Ok(one));
    }

    #[test]
    fn the_bucket_follows_the_pieces_on_the_board() {
        // Bullet's MaterialCount<8>: (pieces − 2) / 4.
        let eight: Vec<usize> = (2..=32).map(|n| output_bucket(n, 8)).collect();
        assert_eq!(
            eight,
            (2..=32).map(|n| ((n - 2) / 4).min(7)).collect::<Vec<_>>()
        );
        assert_eq!(output_bucket(32, 8), 7);
        assert_eq!(output_bucket(2, 8), 0);
        for buckets in 1..=MAX_BUCKETS {
            let all: Vec<usize> = (0..=40).map(|n| output_bucket(n, buckets)).collect();
            assert!(all.windows(2).all(|w| w[0] <= w[1]), "{buckets}: {all:?}");
            assert_eq!(all[2], 0);
            assert_eq!(all[32], buckets - 1, "{buckets}: {all:?}");
        }
    }

    #[test]
    fn each_bucket_evaluates_with_its_own_output_layer() {
        let network = random_bucketed_network(16, 8, 4);
        let ours: Vec<i16> = (0..16).map(|i| i * 17 - 40).collect();
        let theirs: Vec<i16> = (0..16).map(|i| 250 - i * 13).collect();
        let by_bucket: Vec<i32> = (0..8)
            .map(|b| network.output(&ours, &theirs, 2 + 4 * b))
            .collect();
        for (b, &got) in by_bucket.iter().enumerate() {
            // The same sum by hand from bucket b's weights and bias.
            let weights = network.output_weights(b);
            let mut sum = 0i64;
            for i in 0..16 {
                let (o, t) = (
                    i64::from(ours[i].clamp(0, 255)),
                    i64::from(theirs[i].clamp(0, 255)),
                );
                sum += o * o * i64::from(weights[i]) + t * t * i64::from(weights[16 + i]);
            }
            let want = (sum / 255 + i64::from(network.output_bias(b))) * 400 / (255 * 64);
            assert_eq!(i64::from(got), want, "bucket {b}");
            assert_eq!(network.output(&ours, &theirs, 5 + 4 * b), got, "bucket {b}");
        }
        let mut distinct = by_bucket.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 4, "{by_bucket:?}");
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
        newer[8] = 3;
        assert_eq!(
            Network::from_bytes(&newer),
            Err(NetworkError::UnsupportedVersion { found: 3 })
        );
        let bucketed = random_bucketed_network(8, 2, 2).to_bytes();
        for bad in [0u32, 17, u32::MAX] {
            let mut wrong = bucketed.clone();
            wrong[16..20].copy_from_slice(&bad.to_le_bytes());
            assert_eq!(
                Network::from_bytes(&wrong),
                Err(NetworkError::BadBuckets {
                    buckets: u64::from(bad)
                })
            );
        }
        assert_eq!(
            Network::from_bytes(&bucketed[..18]),
            Err(NetworkError::TooShort { len: 18 })
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
        let refused = Network::from_parts(
            hidden,
            1,
            vec![0; INPUTS * hidden],
            vec![0; hidden],
            output,
            vec![0],
        );
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
            buckets: 1,
            feature_weights: features,
            feature_bias: vec![0; hidden],
            output_weights: vec![0; 2 * hidden],
            output_biases: vec![0],
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
        let mut rng = crate::seed::SplitMix::new(9);
        for bytes in [
            random_network(2, 3).to_bytes(),
            random_bucketed_network(2, 3, 3).to_bytes(),
        ] {
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
}
