//! Exponential backoff for calls to the controller: 50 ms doubling up to 1 s.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    start: Duration,
    cap: Duration,
}

impl Backoff {
    pub fn new(start: Duration, cap: Duration) -> Backoff {
        Backoff {
            next: start,
            start,
            cap,
        }
    }

    /// The delay before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.cap);
        d
    }

    pub fn reset(&mut self) {
        self.next = self.start;
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new(Duration::from_millis(50), Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let mut b = Backoff::default();
        let ms: Vec<u128> = (0..7).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(ms, vec![50, 100, 200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(50));
    }
}
