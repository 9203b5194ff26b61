"""The rebase engine. Modules, each building on the one before:

    odb.py          trees and commits built in memory; persisted as one pack at the end
    merge.py        merge_trees(): the one merge, merge-ort's answer (in memory where provably
                    the same, git merge-tree --stdin everywhere else; prefetch() sends
                    merges known ahead to merge-tree processes of their own)
    replay.py       replay_commits(): cherry-picks through that merge (public API)
    resolve.py      ReplayConflict, and the resolver/recorder protocol (shared conflict memory)
    merged.py       rules that declare a topic merged upstream (RULES: add yours there)
    integration.py  integrate(): base + topics as a chain of merges, inter-topic conflicts
    ports.py        what the caller hands in: SeriesRepo (a series in its repository), TransactionPort (the transaction)
    ending.py       how an operation ends, handed in by the verb (TopicsEnding: the rebase's)
    worktree.py     the conflict worktree; the user's checked-out topic branches
    rebase.py       start / begin / continue_rebase / abort_rebase / build_integration
    report.py       the per-topic report and range-diff summary (.git/series/reports/)

The engine is a library: it never names a verb or prints CLI text, and the conflict
store reaches it as hooks (tests/test_engine_library.py checks both). What a halted
operation leaves on disk is the transaction's record, series.ops.halted.
"""
