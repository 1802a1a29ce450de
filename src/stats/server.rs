// SPDX-License-Identifier: GPL-2.0-only
//! The scx_stats server: a JSON-over-UNIX-socket endpoint that answers "stats" with the latest
//! [`PandemoniumMetrics`] the control loop published, and "stats_meta" with the field descriptions.

use super::metrics::PandemoniumMetrics;
use anyhow::{Context, Result, anyhow};
use scx_stats::prelude::*;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The control loop's hand-off to the server: the newest sample, replaced once a second. A mutex
/// rather than a channel: a reader only ever wants the latest value, never a backlog.
#[derive(Clone, Default)]
pub struct Publisher(Arc<Mutex<Option<PandemoniumMetrics>>>);

impl Publisher {
    pub fn publish(&self, m: PandemoniumMetrics) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
    }

    pub fn latest(&self) -> Option<PandemoniumMetrics> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Metadata and the "top" reader. Until the first tick there is nothing to report: the reader
/// answers EAGAIN, which the monitor takes as "loading, ask again".
pub fn server_data(publisher: Publisher) -> StatsServerData<(), ()> {
    StatsServerData::new()
        .add_meta(PandemoniumMetrics::meta())
        .add_stats(
            "top",
            Box::new(move |_args, _chan| match publisher.latest() {
                Some(m) => m.to_json(),
                None => Err(anyhow!("no statistics yet: the scheduler is still loading")
                    .context(StatsErrno(libc::EAGAIN))),
            }),
        )
}

/// Binds the socket at `path` (replacing a stale one) and serves from a background thread until
/// the returned server is dropped.
pub fn launch(publisher: Publisher, path: &Path) -> Result<StatsServer<(), ()>> {
    StatsServer::new(server_data(publisher))
        .set_path(path)
        .launch()
        .with_context(|| format!("starting the stats server at {}", path.display()))
}

/// `--help-stats`: every field with its type and description.
pub fn describe(w: &mut impl std::io::Write) -> Result<()> {
    server_data(Publisher::default()).describe_meta(w, None)
}
