//! Checkpoints: every model in ONE versioned JSON file, written atomically
//! (a temporary file in the same directory, synced, then renamed over the
//! old one), so a restart does not lose a day of history and a crash while
//! writing never leaves a torn file.
//!
//! The reference writes one JSON file per model (up to 12 per minute);
//! one file is simpler to keep consistent and is ~150 KiB for 150 pods.
//!
//! A file that cannot be read or parsed, has another version or another
//! bucket layout is reported as an error; [`load_or_ignore`] logs it and
//! carries on without history — it never stops the agent.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::PredictorConfig;
use super::histogram::{HistogramOptions, HistogramState};

/// The format version written and accepted.
pub const CHECKPOINT_VERSION: u32 = 1;

/// The contents of a checkpoint file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// [`CHECKPOINT_VERSION`].
    pub version: u32,
    /// Buckets of the CPU histograms (158): a file with another layout is
    /// refused.
    pub cpu_buckets: u32,
    /// Buckets of the memory histograms (205).
    pub memory_buckets: u32,
    /// CPU half-life when written, seconds (informational: weights are
    /// relative, a changed half-life applies from the next sample on).
    pub cpu_half_life_seconds: u64,
    /// Memory half-life when written, seconds.
    pub memory_half_life_seconds: u64,
    /// The models.
    pub models: Vec<ModelCheckpoint>,
}

/// One model in a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCheckpoint {
    /// Pod UID, or a node item's UID (`__node__`, `__node-koord-prod__`, ...).
    pub uid: String,
    /// When the model was last updated, Unix ms.
    pub last_updated_ms: i64,
    /// The CPU histogram.
    pub cpu: HistogramState,
    /// The memory histogram.
    pub memory: HistogramState,
}

impl Checkpoint {
    /// A checkpoint of `models` with the current layout.
    pub fn new(config: &PredictorConfig, models: Vec<ModelCheckpoint>) -> Self {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            cpu_buckets: HistogramOptions::cpu().num_buckets() as u32,
            memory_buckets: HistogramOptions::memory().num_buckets() as u32,
            cpu_half_life_seconds: config.cpu_half_life.as_secs(),
            memory_half_life_seconds: config.memory_half_life.as_secs(),
            models,
        }
    }
}

/// Why a checkpoint could not be written or used.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Reading, writing or renaming failed.
    #[error("checkpoint {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a checkpoint.
    #[error("checkpoint {path}: not a valid checkpoint: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's error (with line and column).
        source: serde_json::Error,
    },
    /// Another format version.
    #[error("checkpoint {path}: version {found}, this agent reads version {expected}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// [`CHECKPOINT_VERSION`].
        expected: u32,
    },
    /// Another bucket layout.
    #[error(
        "checkpoint {path}: histograms with {cpu}/{memory} buckets, this agent uses {want_cpu}/{want_memory}"
    )]
    Layout {
        /// The file.
        path: PathBuf,
        /// CPU buckets in the file.
        cpu: u32,
        /// Memory buckets in the file.
        memory: u32,
        /// CPU buckets expected.
        want_cpu: u32,
        /// Memory buckets expected.
        want_memory: u32,
    },
}

/// The checkpoint as JSON bytes.
pub fn encode(checkpoint: &Checkpoint) -> Vec<u8> {
    // Serializing plain data to a Vec cannot fail.
    serde_json::to_vec(checkpoint).unwrap_or_default()
}

/// Parses and checks a checkpoint; `path` only names the source in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Checkpoint, CheckpointError> {
    let path_buf = || path.to_path_buf();
    // Check the version before the layout of the rest.
    #[derive(Deserialize)]
    struct Header {
        version: u32,
    }
    let header: Header = serde_json::from_slice(bytes)
        .map_err(|source| CheckpointError::Parse { path: path_buf(), source })?;
    if header.version != CHECKPOINT_VERSION {
        return Err(CheckpointError::Version {
            path: path_buf(),
            found: header.version,
            expected: CHECKPOINT_VERSION,
        });
    }
    let cp: Checkpoint = serde_json::from_slice(bytes)
        .map_err(|source| CheckpointError::Parse { path: path_buf(), source })?;
    let (want_cpu, want_memory) = (
        HistogramOptions::cpu().num_buckets() as u32,
        HistogramOptions::memory().num_buckets() as u32,
    );
    if cp.cpu_buckets != want_cpu || cp.memory_buckets != want_memory {
        return Err(CheckpointError::Layout {
            path: path_buf(),
            cpu: cp.cpu_buckets,
            memory: cp.memory_buckets,
            want_cpu,
            want_memory,
        });
    }
    Ok(cp)
}

/// Writes the checkpoint to `path` atomically: `path.tmp` in the same
/// directory, synced, renamed over `path`, then the directory synced (best
/// effort).
pub fn save(path: &Path, checkpoint: &Checkpoint) -> Result<(), CheckpointError> {
    let io = |source| CheckpointError::Io { path: path.to_path_buf(), source };
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&encode(checkpoint))?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(io(e));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Makes the rename durable; not every file system allows it.
        let _ = fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Reads a checkpoint; `Ok(None)` if the file does not exist.
pub fn load(path: &Path) -> Result<Option<Checkpoint>, CheckpointError> {
    match fs::read(path) {
        Ok(bytes) => decode(&bytes, path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CheckpointError::Io { path: path.to_path_buf(), source }),
    }
}

/// [`load`], logging a bad file as a warning and returning `None` for it:
/// the agent starts without history rather than not at all.
pub fn load_or_ignore(path: &Path) -> Option<Checkpoint> {
    match load(path) {
        Ok(cp) => cp,
        Err(e) => {
            tracing::warn!(error = %e, "ignoring the predictor checkpoint");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predictor::{PredictServer, Predictions, TrainingSamples};
    use kolo_core::clock::Timestamp;

    fn server() -> PredictServer {
        let mut s = PredictServer::new(PredictorConfig::default());
        let samples = TrainingSamples {
            pods: vec![("uid-a".into(), 0.7, 5e8)],
            priorities: [(0.7, 5e8), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)],
            node: Some((2.0, 3e9)),
            system: Some((1.3, 2.5e9)),
            skipped_pods: 0,
        };
        for i in 0..10 {
            s.apply(&samples, Timestamp::from_second(1_767_225_600 + 60 * i).unwrap());
        }
        s
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prediction.json");
        assert!(load(&path).unwrap().is_none(), "missing file: no checkpoint, no error");
        let s = server();
        let cp = s.to_checkpoint();
        save(&path, &cp).unwrap();
        assert!(!dir.path().join("prediction.json.tmp").exists());
        let back = load(&path).unwrap().unwrap();
        assert_eq!(back.models.len(), cp.models.len());
        let mut restored = PredictServer::new(PredictorConfig::default());
        restored.restore(&back, |_| true);
        assert_eq!(restored.pod("uid-a"), s.pod("uid-a"));
        // Saving again replaces the file.
        save(&path, &PredictServer::new(PredictorConfig::default()).to_checkpoint()).unwrap();
        assert!(load(&path).unwrap().unwrap().models.is_empty());
    }

    #[test]
    fn corrupt_files_are_errors_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp.json");
        let cases: &[(&[u8], &str)] = &[
            (b"", "not a valid checkpoint"),
            (b"{\"version\":1,\"models\":[", "not a valid checkpoint"),
            (b"\xff\xfe garbage", "not a valid checkpoint"),
            (b"{\"version\":7}", "version 7"),
            (
                b"{\"version\":1,\"cpuBuckets\":100,\"memoryBuckets\":205,\"cpuHalfLifeSeconds\":1,\"memoryHalfLifeSeconds\":1,\"models\":[]}",
                "100/205 buckets",
            ),
        ];
        for (bytes, want) in cases {
            fs::write(&path, bytes).unwrap();
            let err = load(&path).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
            assert!(err.contains("cp.json"), "{err}");
            assert!(load_or_ignore(&path).is_none());
        }
        // A truncated real checkpoint too.
        let bytes = encode(&server().to_checkpoint());
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(load_or_ignore(&path).is_none());
    }

    #[test]
    fn invalid_models_are_skipped_not_fatal() {
        let mut cp = server().to_checkpoint();
        cp.models[0].cpu.buckets.push((9999, 1.0));
        let mut restored = PredictServer::new(PredictorConfig::default());
        let report = restored.restore(&cp, |_| true);
        assert_eq!(report.invalid, 1);
        assert_eq!(report.restored, cp.models.len() - 1);
    }

    #[test]
    fn save_into_a_missing_directory_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/cp.json");
        let err = save(&path, &server().to_checkpoint()).unwrap_err();
        assert!(matches!(err, CheckpointError::Io { .. }), "{err}");
    }
}
