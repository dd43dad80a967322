//! One replica's simulated disk: a superblock, a checkpoint and a journal
//! above it, the journal with a volatile image (what the process wrote)
//! and a durable one (what a crash keeps). A Journal or TruncateAfter
//! action changes the volatile journal; Sync makes it durable; the
//! superblock and checkpoints are written atomically and durably (the
//! replica persists the superblock before it sends anything that depends
//! on it; a checkpoint is a temp file, fsync, rename, directory fsync).

use consensus::vsr::Durable;
use consensus::vsr::message::{Entry, Snapshot};
use consensus::{Op, View};

#[derive(Debug, Clone, Default)]
pub struct Disk {
    view: View,
    log_view: View,
    snapshot: Option<Snapshot>,
    /// Journal entries above the checkpoint's op (from op 1 without one).
    volatile: Vec<Entry>,
    durable: Vec<Entry>,
    uncertain: bool,
    /// Wiped, and nothing written since: the replica boots blank.
    blank: bool,
}

impl Disk {
    /// The op the journal's first slot holds.
    fn first_op(&self) -> Op {
        self.snapshot.as_ref().map_or(Op::ZERO, Snapshot::op).next()
    }

    pub fn journal(&mut self, entry: Entry) {
        assert!(entry.op >= self.first_op(), "never below the checkpoint");
        let index = usize::try_from(entry.op.0 - self.first_op().0).expect("fits");
        assert!(
            index <= self.volatile.len(),
            "the journal is written without holes"
        );
        self.volatile.truncate(index);
        self.volatile.push(entry);
    }

    pub fn truncate_after(&mut self, op: Op) {
        assert!(op.next() >= self.first_op(), "never below the checkpoint");
        let keep = usize::try_from(op.0 + 1 - self.first_op().0).expect("fits");
        self.volatile.truncate(keep);
    }

    /// A checkpoint: the snapshot replaces the journal through its op, in
    /// both images (atomic and durable).
    pub fn checkpoint(&mut self, snapshot: Snapshot) {
        let drop = usize::try_from(snapshot.op().0 + 1 - self.first_op().0).expect("fits");
        assert!(
            drop <= self.durable.len(),
            "a checkpoint is of synced, applied ops"
        );
        self.volatile.drain(..drop.min(self.volatile.len()));
        self.durable.drain(..drop);
        self.snapshot = Some(snapshot);
        self.blank = false;
    }

    /// State transfer: the snapshot replaces the whole journal.
    pub fn install(&mut self, snapshot: Snapshot) {
        self.volatile.clear();
        self.durable.clear();
        self.snapshot = Some(snapshot);
        self.blank = false;
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

    /// Nothing was ever written here (and it was not wiped).
    pub fn untouched(&self) -> bool {
        self.view == View(0)
            && self.log_view == View(0)
            && self.snapshot.is_none()
            && self.durable.is_empty()
            && self.volatile.is_empty()
            && !self.uncertain
            && !self.blank
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
            snapshot: self.snapshot.clone(),
            entries: self.durable.clone(),
            uncertain: self.uncertain,
            blank: self.blank,
        }
    }

    pub fn durable_len(&self) -> usize {
        self.durable.len()
    }

    /// Power loss instead of a process crash: of the entries appended
    /// since the last sync, the sectors of a prefix may have reached the
    /// platter anyway (`keep` chooses how many; a torn entry is cut by the
    /// journal scan, so it counts as lost). A rewrite since the last sync
    /// (a truncation) is lost whole. Returns how many were kept.
    pub fn power_loss(&mut self, keep: u64) -> usize {
        let synced = self.durable.len();
        let appended = self.volatile.len() >= synced
            && self
                .volatile
                .iter()
                .zip(&self.durable)
                .all(|(a, b)| a.identity == b.identity && a.op == b.op);
        if !appended || self.volatile.len() == synced {
            return 0;
        }
        let extra = self.volatile.len() - synced;
        let kept = usize::try_from(keep % (extra as u64 + 1)).expect("fits");
        self.durable = self.volatile[..synced + kept].to_vec();
        if kept > 0 {
            self.blank = false; // a journal file exists now
        }
        kept
    }

    /// A latent sector error or a misdirected write on one durable entry:
    /// its body damaged (its identity no longer matches), or another
    /// entry's sectors written over its slot (it holds another op). `pick`
    /// chooses which entry and which fault.
    pub fn corrupt(&mut self, pick: u64) -> bool {
        if self.durable.is_empty() {
            return false;
        }
        if pick & 2 != 0 && self.durable.len() > 1 {
            let len = self.durable.len() as u64;
            let to = ((pick >> 2) % len) as usize;
            let from = ((to as u64 + 1 + (pick >> 10) % (len - 1)) % len) as usize;
            self.durable[to] = self.durable[from].clone();
            self.volatile = self.durable.clone();
            return true;
        }
        // Half the time the newest entry: the one most likely acknowledged
        // by this replica and few others, where a lost copy hurts most.
        let len = self.durable.len() as u64;
        let index = if pick & 1 == 0 {
            len - 1
        } else {
            (pick >> 1) % len
        } as usize;
        let entry = &mut self.durable[index];
        entry.body = [&entry.body[..], &[0xA5]].concat().into();
        self.volatile = self.durable.clone();
        true
    }
}
