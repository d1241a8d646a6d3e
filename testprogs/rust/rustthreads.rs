//! Rust std threads for emuprof's tests: scoped threads, an mpsc channel, a
//! Mutex/Condvar pair and a Barrier. Prints only results that do not depend
//! on the interleaving.
//!
//!     rustthreads [workers]   (default 4)

use std::sync::mpsc;
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::thread;

#[inline(never)]
fn collatz_steps(mut n: u64) -> u64 {
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

fn scoped_sums(workers: u64) -> u64 {
    let chunk = 20_000 / workers;
    let mut totals = vec![0u64; workers as usize];
    thread::scope(|s| {
        for (i, total) in totals.iter_mut().enumerate() {
            s.spawn(move || {
                let start = 1 + i as u64 * chunk;
                *total = (start..start + chunk).map(collatz_steps).sum();
            });
        }
    });
    totals.iter().sum()
}

fn channel_pipeline(workers: u64) -> u64 {
    let (tx, rx) = mpsc::channel();
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..100 {
                    tx.send(w * 1000 + i).expect("receiver alive");
                }
            })
        })
        .collect();
    drop(tx);
    let sum = rx.iter().sum();
    for h in handles {
        h.join().expect("sender");
    }
    sum
}

fn condvar_handoff() -> u64 {
    let pair = Arc::new((Mutex::new((0u64, false)), Condvar::new()));
    let theirs = Arc::clone(&pair);
    let producer = thread::spawn(move || {
        for i in 1..=50 {
            let (lock, cvar) = &*theirs;
            let mut slot = lock.lock().expect("lock");
            while slot.1 {
                slot = cvar.wait(slot).expect("wait");
            }
            *slot = (i, true);
            cvar.notify_all();
        }
    });
    let mut sum = 0;
    for _ in 0..50 {
        let (lock, cvar) = &*pair;
        let mut slot = lock.lock().expect("lock");
        while !slot.1 {
            slot = cvar.wait(slot).expect("wait");
        }
        sum += slot.0;
        slot.1 = false;
        cvar.notify_all();
    }
    producer.join().expect("producer");
    sum
}

fn barrier_rounds(workers: usize) -> usize {
    let barrier = Arc::new(Barrier::new(workers));
    let leaders = Arc::new(Mutex::new(0usize));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let leaders = Arc::clone(&leaders);
            thread::spawn(move || {
                for _ in 0..3 {
                    if barrier.wait().is_leader() {
                        *leaders.lock().expect("lock") += 1;
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("worker");
    }
    let n = *leaders.lock().expect("lock");
    n
}

fn main() {
    let workers: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    println!("scoped: {}", scoped_sums(workers));
    println!("channel: {}", channel_pipeline(workers));
    println!("condvar: {}", condvar_handoff());
    println!("barrier leaders: {}", barrier_rounds(workers as usize));
}
