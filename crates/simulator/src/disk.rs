//! One replica's simulated disk: a superblock and a journal, each with a
//! volatile image (what the process wrote) and a durable one (what a crash
//! keeps). A Journal or TruncateAfter action changes the volatile journal;
//! Sync makes it durable; the superblock is written atomically and durably
//! (the replica persists it before it sends anything that depends on it).

use consensus::View;
use consensus::vsr::Durable;
use consensus::vsr::message::Entry;

#[derive(Debug, Clone, Default)]
pub struct Disk {
    view: View,
    log_view: View,
    volatile: Vec<Entry>,
    durable: Vec<Entry>,
    uncertain: bool,
    /// Wiped, and nothing written since: the replica boots blank.
    blank: bool,
}

impl Disk {
    pub fn journal(&mut self, entry: Entry) {
        let index = usize::try_from(entry.op.0 - 1).expect("fits");
        assert!(
            index <= self.volatile.len(),
            "the journal is written without holes"
        );
        self.volatile.truncate(index);
        self.volatile.push(entry);
    }

    pub fn truncate_after(&mut self, op: consensus::Op) {
        self.volatile.truncate(usize::try_from(op.0).expect("fits"));
    }

    pub fn sync(&mut self) {
        self.durable = self.volatile.clone();
        self.blank = false;
    }

    pub fn superblock(&mut self, view: View, log_view: View) {
        assert!(view >= self.view, "the persisted view never goes back");
        assert!(
            log_view >= self.log_view,
            "the persisted log view never goes back"
        );
        self.view = view;
        self.log_view = log_view;
        self.blank = false;
    }

    pub fn uncertain(&mut self, uncertain: bool) {
        self.uncertain = uncertain;
        self.blank = false;
    }

    /// The operator wipes the data directory (`--fresh`): everything is
    /// gone, the superblock included.
    pub fn wipe(&mut self) {
        *self = Disk {
            blank: true,
            ..Disk::default()
        };
    }

    /// What a restart finds: the durable images only.
    pub fn crash(&mut self) -> Durable {
        self.volatile = self.durable.clone();
        Durable {
            view: self.view,
            log_view: self.log_view,
            entries: self.durable.clone(),
            uncertain: self.uncertain,
            blank: self.blank,
        }
    }

    pub fn durable_len(&self) -> usize {
        self.durable.len()
    }

    /// A latent sector error: one durable entry's body is damaged (its
    /// identity no longer matches). `pick` chooses which.
    pub fn corrupt(&mut self, pick: u64) -> bool {
        if self.durable.is_empty() {
            return false;
        }
        let index = (pick % self.durable.len() as u64) as usize;
        let entry = &mut self.durable[index];
        entry.body.push(0xA5);
        self.volatile = self.durable.clone();
        true
    }
}
