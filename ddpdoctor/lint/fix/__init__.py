"""`lint --fix` / `--patch`: the edit for findings whose fix is mechanical and safe.

Every fix edits the user's source text by position (line and column from the syntax tree), never
by re-printing the tree, so comments, quotes and line breaks stay as the user wrote them. A fix
is offered only after the edited sources were linted again: the finding gone, nothing new.
One module per fix kind (set_epoch, save_guard, sampler, no_sync, minlength), `edits` the text
machinery, `syntax` what they share over the tree, `plan` the proving and `apply` the writing.
"""
