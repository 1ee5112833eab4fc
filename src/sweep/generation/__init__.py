"""The generation half: readers, the chat client, the judge, grading."""
