"""The rule-based stand-in for a chat model (sweep.dev.standin_chat): not a model, so what it
writes is fixed by its rule, checked here by hand, and its questions parse as generate's."""

from __future__ import annotations

from sweep.dev.standin_chat import lift_questions, reply_for
from sweep.evaluation.smell import synthetic_smell
from sweep.questions.generate import parse_questions
from sweep.questions.prompts import PROMPT

PASSAGE = ("Short one. The incubation period of the coronavirus ranges from two to fourteen "
           "days in most patients. Masks reduce transmission. Vaccines against influenza are "
           "updated every year because the circulating strains change quickly.")


def test_lifted_questions_by_hand() -> None:
    assert lift_questions(PASSAGE, 2) == [
        "what about incubation period coronavirus ranges?",
        "what about vaccines influenza updated every?"]  # "against": a stop word
    assert lift_questions(PASSAGE, 0) == []


def test_every_word_is_the_passages_and_the_reply_parses() -> None:
    prompt = PROMPT.format(passage=PASSAGE, title="t", n=3)
    body = reply_for({"model": "standin-lift",
                      "messages": [{"role": "user", "content": prompt}]})
    content = body["choices"][0]["message"]["content"]
    questions = parse_questions(content, 3)
    assert len(questions) == 3 and body["model"] == "standin-lift"
    assert all(synthetic_smell(q, [PASSAGE]) == 1.0 for q in questions)
    assert body["usage"]["completion_tokens"] == len(content.split())
    assert reply_for({"messages": [{"role": "user", "content": prompt}]}) == body  # fixed
