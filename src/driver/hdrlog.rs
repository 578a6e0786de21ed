//! HdrHistogram interval logs (`load --hdr-log`, read by `framebench merge`): the format of
//! Java's `HistogramLogWriter` (V2 histograms, deflate-compressed, one line per interval, a
//! `Tag=` per cell), written and read with the `hdrhistogram` crate's own
//! `serialization::interval_log`, so that HdrHistogram's other readers (Java's
//! `HistogramLogProcessor`, HdrLogProcessing, Python's `hdrh`) read them too. Latencies are in
//! nanoseconds; timestamps are absolute (seconds since the Unix epoch), with `StartTime` the
//! first cell's window.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Context as _;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::stats::CellResult;

/// One interval of a log.
pub(crate) struct Interval {
    /// The cell's tag.
    pub(crate) tag: String,
    /// Start, in seconds since the Unix epoch.
    pub(crate) start: f64,
    /// Length in seconds.
    pub(crate) length: f64,
    /// Latencies in nanoseconds.
    pub(crate) histogram: Histogram<u64>,
}

/// Writes every cell's interval histograms to `path`: one line per interval, tagged with the
/// cell's [`CellResult::hdr_tag`], timestamped from the start of its recorded window at the
/// interval of the run, `interval` seconds.
pub(crate) fn write(path: &Path, cells: &[CellResult], interval: f64) -> anyhow::Result<()> {
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let first = cells
        .iter()
        .filter_map(|c| c.recorded_from_unix)
        .fold(f64::INFINITY, f64::min);
    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment("framebench load: latency in nanoseconds, from the intended send time");
    if first.is_finite() {
        builder.with_start_time(UNIX_EPOCH + Duration::from_secs_f64(first));
    }
    let mut writer = builder.begin_log_with(&mut out, &mut serializer)?;
    for c in cells {
        let (Some(tag), Some(from)) = (&c.hdr_tag, c.recorded_from_unix) else {
            continue;
        };
        let tag = Tag::new(tag).with_context(|| format!("bad tag {tag:?}"))?;
        // A count-bounded cell ends early: its last interval ends with it, and the intervals
        // of its bound after that are not written (a 20 s bound in 1 ms intervals would be
        // 20,000 lines for a run of a few milliseconds).
        let within = ((c.seconds / interval).ceil() as usize).max(c.intervals.recorded());
        for (k, h) in c.intervals.iter().enumerate().take(within) {
            let start = from + k as f64 * interval;
            let length = interval.min(from + c.seconds - start).max(1e-6);
            writer
                .write_histogram(
                    h,
                    Duration::from_secs_f64(start),
                    Duration::from_secs_f64(length),
                    Some(tag),
                )
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    std::fs::write(path, out)?;
    Ok(())
}

/// Every interval of the log at `path`.
pub(crate) fn read(path: &Path) -> anyhow::Result<Vec<Interval>> {
    let bytes = std::fs::read(path)?;
    let mut deserializer = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| anyhow::anyhow!("not an interval log: {e:?}"))?;
        let LogEntry::Interval(i) = entry else {
            continue;
        };
        let data = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            i.encoded_histogram(),
        )
        .context("a histogram that is not base64")?;
        let histogram: Histogram<u64> = deserializer
            .deserialize(&mut data.as_slice())
            .map_err(|e| anyhow::anyhow!("a histogram that does not decode: {e:?}"))?;
        out.push(Interval {
            tag: i.tag().map(|t| t.as_str().to_owned()).unwrap_or_default(),
            start: i.start_timestamp().as_secs_f64(),
            length: i.duration().as_secs_f64(),
            histogram,
        });
    }
    Ok(out)
}

/// This host's name, for the results of a run on several hosts.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}
