"""The rebase engine. Modules, each building on the one before:

    odb.py          trees and commits built in memory; persisted as one pack at the end
    merge.py        merge_trees(): the one merge, merge-ort's answer (in memory where provably
                    the same, git merge-tree --stdin everywhere else)
    replay.py       replay_commits(): cherry-picks through that merge (public API)
    resolve.py      Conflict, and the resolver/recorder protocol (shared conflict memory)
    merged.py       rules that declare a topic merged upstream (RULES: add yours there)
    integration.py  integrate(): base + topics as a chain of merges, inter-topic conflicts
    state.py        a halted rebase on disk (.git/series/rebase/), temporary refs
    worktree.py     the conflict worktree; the user's checked-out topic branches
    rebase.py       start / continue_rebase / abort_rebase / build_integration
    adoption.py     adopt-upstream through the same flow: provenance trailers, its end transaction
    report.py       the per-topic report and range-diff summary (.git/series/reports/)
"""
