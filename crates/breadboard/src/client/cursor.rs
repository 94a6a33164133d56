//! The pure resume cursor of one session stream: which `seq` comes next, what to send as
//! `Last-Event-ID` (the last numeric `seq`, never a UUID), and gap detection.

/// How an incoming event relates to what was already delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The next `seq`: deliver it and advance.
    Deliver,
    /// No `seq` (the connect-time snapshot): deliver it, but it is not a resume point.
    Unsequenced,
    /// Already delivered (a replay overlapping what was seen): drop it.
    Duplicate,
    /// Events between `expected` and `got` are missing.
    Gap {
        /// The `seq` that should have come.
        expected: u64,
        /// The `seq` that came.
        got: u64,
    },
}

/// Why a stream has a continuity gap.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GapReason {
    /// The engine answered 409 `resume_window_exceeded`: the last seen id left its ring.
    WindowExceeded {
        /// The id that was refused.
        last_seq: u64,
    },
    /// A `seq` stayed missing: the ring no longer started at it, or every allowed resume
    /// from the last contiguous `seq` skipped it again.
    Discontinuity {
        /// The `seq` that should have come.
        expected: u64,
        /// The `seq` that came.
        got: u64,
    },
    /// The engine itself published a `stream.gap` event.
    EngineGap {
        /// Its `payload.reason`.
        reason: String,
    },
}

impl std::fmt::Display for GapReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::WindowExceeded { last_seq } => write!(
                f,
                "the engine no longer holds events after seq {last_seq} (resume window exceeded)"
            ),
            Self::Discontinuity { expected, got } => {
                write!(
                    f,
                    "events {expected}..{} stayed missing after repeated resumes",
                    got.saturating_sub(1)
                )
            }
            Self::EngineGap { reason } => write!(f, "the engine reported a stream gap: {reason}"),
        }
    }
}

/// The resume position of one session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumeCursor {
    last_seq: Option<u64>,
}

impl ResumeCursor {
    /// A cursor after `last_seq` (`None`: nothing seen yet, the next event is `seq` 1).
    pub fn new(last_seq: Option<u64>) -> Self {
        Self { last_seq }
    }

    /// The last `seq` delivered.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// The `seq` expected next.
    pub fn expected(&self) -> u64 {
        self.last_seq.map_or(1, |s| s.saturating_add(1))
    }

    /// What to send as `Last-Event-ID`: the last numeric `seq`, or nothing.
    pub fn resume_id(&self) -> Option<String> {
        self.last_seq.map(|s| s.to_string())
    }

    /// Classifies an incoming `seq` without changing the cursor.
    pub fn admit(&self, seq: Option<u64>) -> Admission {
        let Some(seq) = seq else {
            return Admission::Unsequenced;
        };
        let expected = self.expected();
        if seq < expected {
            Admission::Duplicate
        } else if seq == expected {
            Admission::Deliver
        } else {
            Admission::Gap { expected, got: seq }
        }
    }

    /// Records `seq` as delivered (also after accepting a gap).
    pub fn advance(&mut self, seq: u64) {
        if self.last_seq.is_none_or(|last| seq > last) {
            self.last_seq = Some(seq);
        }
    }
}
