//! A node's usage reports, recycled: the report the simulator fills every
//! report interval is, where possible, the one it published two intervals
//! ago, which the scheduler has since replaced and dropped.
//!
//! Why: a thousand nodes report every minute, and a fresh report costs an
//! allocation, a reference count taken on every pod's key (an atomic write
//! to a cache-cold line that other threads touch too), and the same again
//! to drop it. A recycled report keeps its allocation and the keys of the
//! pods it lists again ([`crate::objects::fill_usage_report`]).

use std::sync::Arc;

use kolo_core::usage_report::NodeUsageReport;

/// The last two reports a node published.
#[derive(Debug, Default)]
pub struct ReportRecycler {
    /// Newest first.
    published: [Option<Arc<NodeUsageReport>>; 2],
}

impl ReportRecycler {
    /// A report to fill: the older published one if nobody else holds it
    /// any more, else a new, empty one. Either way it is not shared.
    pub fn take(&mut self) -> Arc<NodeUsageReport> {
        if let Some(mut report) = self.published[1].take()
            && Arc::get_mut(&mut report).is_some()
        {
            return report;
        }
        Arc::new(NodeUsageReport::default())
    }

    /// Remembers `report`, just published.
    pub fn published(&mut self, report: Arc<NodeUsageReport>) {
        self.published[1] = self.published[0].replace(report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_reused_once_nobody_else_holds_it() {
        let mut recycler = ReportRecycler::default();
        let first = recycler.take();
        recycler.published(first.clone());
        // The scheduler holds the newest report; the older slot is empty.
        let second = recycler.take();
        assert!(!Arc::ptr_eq(&first, &second));
        recycler.published(second.clone());
        // `first` is still held (the scheduler has not replaced it): a new
        // report, and `first` is let go.
        let third = recycler.take();
        assert!(!Arc::ptr_eq(&third, &first) && !Arc::ptr_eq(&third, &second));
        recycler.published(third.clone());
        // Once the scheduler drops `second`, it comes back.
        let second_ptr = Arc::as_ptr(&second);
        drop(second);
        let fourth = recycler.take();
        assert_eq!(Arc::as_ptr(&fourth), second_ptr, "the report two intervals old is reused");
        assert_eq!(Arc::strong_count(&fourth), 1);
        drop(first);
    }
}
