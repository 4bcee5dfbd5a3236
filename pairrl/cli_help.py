"""The help layout every `pairrl` command group shares (the root, `pairrl eval`,
`pairrl slurm`): each command listed with its first sentence whole."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typer.core import TyperGroup

if TYPE_CHECKING:  # typer's own copy of click, whose objects its commands receive
    from typer._click import Context, HelpFormatter

__all__ = ["PlainHelpGroup"]


class PlainHelpGroup(TyperGroup):
    """A command group whose help lists each command with its first sentence whole, wrapped
    to the terminal (click's own list cuts it to one line, ending in '...')."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
