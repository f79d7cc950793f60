"""The Course labs: the questions of five ML-systems course reports (/work/shared/coursework), one module each.

A lab module holds its numbers, small pure functions over ``core`` that return plain values or DataFrames (so
tests/test_labs.py checks them against hand arithmetic without a browser), then ``show(db)``, its layout on the Course
labs page (views/course_labs.py), with a question, the engine's answer and how to read it. Every figure in the prose
is computed from ``core`` and the device database, except what a course report wrote, quoted as such. torch is never
imported here; lab 2's timing button loads it.

Convention (``core.CONVENTION``): 1 multiply-add (MAC) = 2 FLOPs; tables show both.
"""

from ui.labs import lab1, lab2, lab3, lab4, lab5

MODULES = {1: lab1, 2: lab2, 3: lab3, 4: lab4, 5: lab5}
LABS = {n: m.TITLE for n, m in MODULES.items()}
NEEDS = {n: m.NEEDS for n, m in MODULES.items()}        # the built-in devices each lab names
