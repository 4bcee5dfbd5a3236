"""rollout: samplers, prompts, judges, pair construction and tournaments.

Kept import-light on purpose: `import rollout` must not pull in torch or transformers,
so the CLI and the config layer start fast. Import submodules directly.
"""
