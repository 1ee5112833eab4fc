"""The default prompt of `sweep questions generate` (``questions.generate_prompt``); a module
of its own so that the config schema takes its default from here without importing the
chat client."""

from __future__ import annotations

# Fields: {passage}, {title}, {n}. Changing it changes every reply: the cache key holds the
# prompt's text, so a new prompt asks again.
PROMPT = (
    "Here is a passage from the document \"{title}\":\n<passage>\n{passage}\n</passage>\n\n"
    "Write {n} different questions that a user of this documentation would type into a "
    "search box or ask a support assistant, and that this passage answers. Write the way "
    "users write: short, informal, in their own words rather than the passage's. One "
    "question a line, nothing else."
)
