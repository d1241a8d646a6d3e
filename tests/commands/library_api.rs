//! Cost assertions in `cargo test` through the library API: the way a project
//! guards its own hot functions (like iai-callgrind, without Valgrind).

use crate::common;

use common::{testprog, Libc};

#[test]
fn fib_costs_are_exact_and_within_budget() -> anyhow::Result<()> {
    // The test program under test, built with `gcc -static -O2` by the harness.
    let fib_binary = testprog("fib", Libc::Glibc, "O2").path;

    let run = emuprof::Run::new(&fib_binary).arg("20").execute()?;
    assert!(run.is_complete());
    assert_eq!(run.exit_status(), Some(0));

    // Exact: fib(20) makes 2·fib(21) − 1 = 21,891 calls, 1 of them from main.
    assert_eq!(run.calls("fib"), 21_891);
    // A budget: fails the test when fib gets more expensive.
    let fib = run.expect_function("fib")?;
    assert!(
        fib.inclusive_instructions < 400_000,
        "fib got slower: {fib:?}"
    );
    // Recursion is counted once: fib's inclusive cost is that of main's call.
    assert!(run.inclusive_instructions("fib") <= run.inclusive_instructions("main"));
    assert!(run.self_instructions("fib") <= run.inclusive_instructions("fib"));

    // Every run gives the same numbers.
    let again = emuprof::Run::new(&fib_binary).arg("20").execute()?;
    assert_eq!(again.profile, run.profile);
    Ok(())
}

#[test]
fn environment_and_seed_are_inputs() -> anyhow::Result<()> {
    let nondet = testprog("nondet", Libc::Glibc, "O2").path;
    let seed0 = emuprof::Run::new(&nondet).execute()?;
    let seed1 = emuprof::Run::new(&nondet).seed(1).execute()?;
    assert_ne!(
        seed0.calls("spin"),
        seed1.calls("spin"),
        "getrandom follows the seed"
    );

    let with_env = emuprof::Run::new(&nondet).env("FOO", "bar").execute()?;
    assert_ne!(
        with_env.total_instructions(),
        seed0.total_instructions(),
        "glibc scans the environment"
    );
    Ok(())
}

#[test]
fn a_missing_function_is_a_helpful_error() -> anyhow::Result<()> {
    let inlined = testprog("inlining", Libc::Glibc, "O2").path;
    let run = emuprof::Run::new(&inlined).execute()?;
    assert_eq!(run.calls("square_plus"), 0, "inlined at -O2");
    let error = run
        .expect_function("square_plus")
        .expect_err("square_plus was inlined")
        .to_string();
    assert!(
        error.contains("no function named \"square_plus\" ran"),
        "{error}"
    );
    let partial = emuprof::Run::new(&inlined)
        .max_instructions(1_000)
        .execute()?;
    assert!(!partial.is_complete());
    Ok(())
}
