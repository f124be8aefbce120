"""The English rules, in one room: those that read a question and the ``Question`` they build,
and those the planner and the checks apply to other text.

A question is read once, when it arrives (``question.Question.read``): its shape, the
alternatives it offers, whether it asks yes or no, what it asks for, which way a comparison
goes, the plan a family relation defines. The planner's steps and the answer checks read those
fields and never parse the question's words again. The rules themselves live here by what they
read: ``names`` (the name runs a question writes), ``alternatives`` ("A or B?"), ``shape`` (the
plan a question needs), ``relations`` (family relations with one reading), ``asked`` (a date, a
place, a unit, a direction) and ``question`` (the ``Question`` and what counts as one). The
rules over other text: ``query_text`` (a planned query's words), ``claims`` (the names and
numbers a sentence or a query states), ``answer_text`` (an answer against its query, the
question's alternatives and the passages' wording) and ``values`` (dates and numbers).

This room sits below every other room of ``agent`` and imports none of them: the planner and the
checks share these rules without importing each other (``[tool.importlinter]``).
"""
