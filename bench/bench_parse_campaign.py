"""Campaign-intent parse benchmark: no fault dropped or swapped without a word (issue 31).

Data: ``bench/data/parse_campaign_heldout.jsonl`` (122 campaign-style intents written from a
test engineer's side without looking at the lexicon, kept apart from the dev and held-out
sets: every application, every fault operator, paraphrases, 16 healthy intents and a few
faults no operator expresses). One intent per line::

  {"id", "kind": "fault"|"healthy", "text", "seed", "labels": {"application", "faults": [
      {"operator", "stream", "anchor", "magnitude", "clause",
       "duration_s"?, "target_phase"?, "alt"?: [operators], "streams"?: [streams]}],
   "unsupported"?: [clauses],
   "scene"?: [{"field", "value", "clause"}]}}

``clause`` quotes the words of the intent that ask for the fault; ``alt`` lists operators that
express it equally (a sender gone silent is ``suppress_sender`` or a ``drop`` of every message);
``unsupported`` quotes clauses no operator expresses (they must be reported).

Per labelled fault, against the parser's first answer (before the verifier's deliberate repairs):

* **bound**: an answer fault has its operator (or an ``alt``) and stream;
* **exact**: bound, and the anchor event, the magnitude (10 %; drop: burst count or
  probability), the duration (10 %) and the target phase agree where the label states them;
* **reported**: not bound, but a ``parser.unparsed_fault`` finding quotes a clause sharing at
  least half of the labelled clause's words;
* **silent drop**: neither bound nor reported.

Scene values (``scene``, labelled from fresh34 on): ``field`` is ``ego.speed_mps``, ``ego.start_distance_m`` or
``<role>.speed_mps`` / ``<role>.gap_m`` / ``<role>.brake_at_s`` (the first agent of that role; a hard brake's time), in
SI units. Against the spec the parse returns: **exact** (within 5 %), **reported** (a finding quotes its clause) or
**lost** (a default, a draw or another value in its place, or no home in the spec, and nothing said). Target: 0 lost.

An answer fault matched to no labelled fault is a **substitution** on an intent asking for
faults (a stand-in for what the parser could not read) and an **invented fault** on a healthy
intent. ``parser.unparsed_fault`` findings on a healthy intent are **false alarms**.
Targets: 0 silent drops, 0 substitutions, 0 invented faults, 0 false alarms.

Run: ``.venv/bin/python bench/bench_parse_campaign.py [--data FILE] [-v] [--json OUT] [--check]``.

Figures, offline backend (issue 31). Before the fixes: application 87.3 %, per-fault exact 44.1 %,
58 of 102 faults bound, 7 reported, **40 silent drops** (+ 3 of 5 unsupported clauses), **11
substitutions**, 1 invented fault, 3 refused. After: application 98.3 %, per-fault exact 98.0 %, 100
bound, 2 reported (refused by the verifier with the reason), 5 of 5 unsupported reported, 0 silent
drops, 0 substitutions, 0 invented, 0 false alarms. Caveat: the fixes were made against this set, so
from here on it measures coverage of its wording; a fresh set is the out-of-sample test.
``data/parse_campaign_fresh.jsonl`` (26 intents written after the fixes, in yet other words) is that
test; its first run: application 100 %, exact 56.5 %, 15 of 23 bound, 7 reported, **1 silent drop** (a
MAP misassociation in new words), 0 substitutions, **1 false alarm** ("quiet junction, radios fine");
after two general fixes to the fault-cue guard: 0 silent drops, 0 false alarms (8 reported, 15 bound).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_parse import UNPARSED, fault_view, load  # noqa: E402
from lastv2x.core.errors import LastV2XError  # noqa: E402
from lastv2x.core.timeline import conflict_time_s  # noqa: E402
from services.llm.config import LlmConfig  # noqa: E402
from services.llm.roles import LlmRoles  # noqa: E402

_SETS = Path(__file__).resolve().parent / "data"
DATA = _SETS / "parse_campaign_heldout.jsonl"
FRESH = _SETS / "parse_campaign_fresh.jsonl"
# written later without reading the parser; fresh3 to fresh8 were scored before any rule saw them (fresh5 first: 64.3 %
# exact, 0 silent drops, 0 substitutions, 0 invented, 1 false alarm; fresh6 first: 56.2 % exact (18 of 32), 7 silent
# drops, 5 substitutions, 0 invented, 2 false alarms; fresh7 first: 58.6 % exact (17 of 29), 2 silent drops, 2
# substitutions, 5 invented faults, 4 false alarms on 7 healthy intents; fresh8 (ETSI/SAE vocabulary) first:
# application 96.7 %, 65.5 % exact (19 of 29), 2 silent drops, 7 substitutions, 1 invented, 4 false alarms on 7 healthy
# intents, 1 refused; fresh9 (feared failures, implied faults, measured-sounding values) first: 86.2 % exact (25 of
# 29), 3 silent drops, 5 substitutions, 0 invented, 0 false alarms, of which 3 silent drops and 3 substitutions were
# this scorer's: an ``alt`` that left out the labelled operator replaced it; scored right, 96.6 % (28 of 29), 0 silent
# drops, 2 substitutions; fresh10 (healthy intents that sound like faults) first: 92.9 % exact (26 of 28), 0 silent
# drops, 0 substitutions, 1 invented fault, 3 false alarms on 7 healthy intents, 1 refused; fresh11 first: 85.7 %
# exact (24 of 28), 1 silent drop, 1 substitution (one fault, f11_017), 1 invented fault (f11_030), 0 false alarms,
# 0 refused; fresh12 first: 100 % exact (29 of 29), 0 silent drops, 0 substitutions, 1 invented fault (f12_020: "none of
# the messages should be lost or stale"), 0 false alarms, 0 refused; fresh13 first: 92.6 % exact (25 of 27), 0 silent
# drops, 0 substitutions, 2 invented faults (f13_014: "aren't delayed, frozen or dropped"), 2 inexact anchors ("the moment
# the app has to decide", "once the app reaches its decision point"), 0 false alarms, 0 refused; fresh14 first: 100 %
# exact (27 of 27), 0 silent drops, 0 substitutions, 1 invented fault (f14_027: "a healthy RLVW run as reference for
# the delayed-SPaT ticket"), 0 false alarms, 0 refused; fresh15 (2026-12-07; the labeller was given two anchors the
# spec has no event for, "lead_brake" and "conflict", mapped to scenario_time and decision_epoch, an operator name
# ours spells spat_phase_corrupt, and no sign convention for positions: f15_015's "12 metres further ahead" is -12 in
# ours) first: application 96.7 %, 53.6 % exact (15 of 28), 2 silent drops, 5 substitutions, 2 invented faults, 0 false
# alarms, 1 refused; the anchors "once it starts braking" and "once the crossing vehicle is near" were read as t = 0;
# fresh16 (healthy intents in fault-like world words, after fresh15's fixes) first: application 100 %, 80.0 % exact
# (20 of 25), 0 silent drops, 1 substitution ("FCW late-warning check"), 2 invented faults ("the previous run lost its
# logs", "a packet error rate target of 10 %"), 3 false alarms; after: 100 % exact, 0/0/0 and 2 healthy intents that
# report a quantity no spec field holds (a KPI's 10 %, "80 m before the stop line at amber onset": that one now times
# the signal plan, so 1 is left). The held-out set's
# c086 ("as it nears the junction") now anchors at the decision epoch, where its label, written before that anchor
# was read, puts none; fresh17 (non-native writers, requirement pastes, magnitudes in odd words) first: application
# 96.7 %, 64.3 % exact (18 of 28), 1 silent drop ("sending same content again and again"), 0 substitutions, 2 invented
# faults ("we dropped pedestrians from the scene", "a delayed departure"), 4 false alarms, 1 refused (a crossroad for IMA
# was made a signalized 4-way); after: 100 % exact, 0/0/0/0 (a pass criterion, "warning within 500 ms", is the
# outcome a test checks, neither bound nor reported); fresh18 (services and test managers: key = value requests,
# YAML-ish lists, emails, abbreviations) first: application 100 %, 76.7 % exact (23 of 30), 1 silent drop ("keeps
# tx'ing the same BSM content"), 1 substitution, 1 invented fault ("the GNSS error is intrinsic, not an injected
# offset"), 6 false alarms; after: 100 % exact, 0/0/0, 4 healthy intents report a requirement's quantity ("latency
# budget 100 ms", "SPaT every 100 ms"), which no spec field holds; fresh19 (assessors, pen testers, standards and
# earlier runs named; written after every rule above) first: 96.4 % exact (27 of 28), 0 silent drops, 2 substitutions
# ("we expect the false alert to be suppressed", "whether the warning is discarded"), 6 invented faults on 3 healthy
# intents (tests named by their fault, "the replay and spoofing campaign", "zero packet loss"), 1 false alarm, 1 wrong
# application, 1 refused; after: 100 % exact, 0/0/0/0, the refusal left (a healthy LTA run whose SPaT is "switched
# off for maintenance": read as a silenced sender LTA cannot hear, refused with a poor reason)); fresh20 (2026-12-07:
# Jira tickets, chat, OEM test specs, questions, emails; written after every rule above) first: application 93.3 %,
# 81.5 % exact (22 of 27), 0 silent drops, 1 substitution ("keeps sending the very same SPaT content, only with fresh
# timestamps" read as a timestamp offset), 6 invented faults on 4 healthy intents ("KPI is advisory latency < 100ms",
# "packet loss logged per junction", "Red onset when ego is ~60 m out" as a 60 m position offset, "even if the
# countdown were off by a second", "timestamp offset statistics"), 3 false alarms (past runs: "last week's run had a
# position offset", "the sender went silent last time"), 1 wrong application ("18 m behind the lead" named no
# application), 1 refused; after: 96.7 % / 92.6 % exact, 0/0/0/0, the refusal left (EEBL with a BSM speed fault: our
# EEBL reads no BSM, refused with that reason); fresh21 (homologation sections, markdown tables, CSV rows, voice memos,
# non-native notes, a fleet operator's complaint; written after every rule above) first: application 100 %, 70.4 % exact
# (19 of 27), 1 silent drop ("MAP binds ego lane to the left-turn signal group" in a table cell), 2 substitutions (a past
# telemetry sentence taken as the fault, "broadcast red when it's actually green" as a countdown error), 7 invented
# faults on 6 healthy intents (a past incident, "measure ... as observed; do not inject any", "this we test in other
# campaign, not now", "replay attack covered in L-08", "we're not injecting anything", a question "what would happen
# if ..."), 6 false alarms; after: 100 % / 92.6 % exact, 0/0/0, 1 false alarm left (a CSV row's columns, "90 km/h,60
# km/h,40 m", which the parser does not read as ego speed, lead speed and gap: said back), 2 inexact (a replay lag said
# as "sent back at twenty seconds ... ten seconds stale", read since; "from when it is 60 m from the conflict point");
# fresh22 (2026-12-07: Gherkin, hand-typed YAML and key=value, a field bug report with a log excerpt, chats where the
# second speaker corrects the first, an FMEA row, a checklist, SMS notes; written after every rule above; the labeller
# was told "right when the lead starts braking" is the decision epoch, which our convention, and every earlier set's
# label, reads as the lead's braking time: f22_002 and f22_012 relabelled scenario_time) first: application 100 %,
# 69.2 % exact (18 of 26), 1 silent drop ("jam GNSS on the ego for 5 s", no operator), 4 substitutions (a Gherkin title
# "RLVW under late SPaT" joined to its Given line, a log line's "+4.9 m", a chat's withdrawn MAP freeze, a stale offset
# read twice), 0 invented faults, 6 false alarms on 8 healthy intents, 10 campaign stops of 22; after: 96.2 % exact,
# 0/0/0, 1 false alarm left ("4 signals, 400 m spacing": no spec field holds a spacing), 2 stops left (the GNSS jam,
# said back as no operator; "an oncoming vehicle ... 70 m away": no field holds an oncoming car's distance); fresh23
# (2026-12-07: hand-written JSON and a Python dict, numbered procedures, ETSI-style test purposes, annoyed customer
# tickets, commit messages and a PR, tab-separated rows, slides, a call transcript, Spanish-, Italian- and Japanese-
# speaking writers; written after fresh22's rules) first: application 100 %, 42.3 % exact (11 of 26), 3 silent drops
# ("we kill ten BSMs in a row", rain on the camera and a CAN-bus fault, no operator), 0 substitutions, 3 invented
# faults ("0 ms added latency", a fixed ghost-vehicle bug, "the replay removed"), 4 false alarms, 8 campaign stops of
# 22; after: 100 % exact, 0/0/0/0, 3 stops left, each a request no operator expresses, said back (rain on the front
# camera, an OTA firmware update, a CAN-bus fault); fresh24 (2026-12-07: "shall" requirements with IDs, markdown tables,
# lowercase voice transcripts, decimal commas, ranges, "one in five" and "packet delivery ratio 80 %", "00:12" and "the
# 12-second mark", feet and yards, bug-tracker threads, a CLI-like line, ids like "relay RV2"; written after fresh23's
# rules; the labeller called "driver distracted by phone" unsupported, which our perception model's default driver, who
# does not watch the lights, already is: f24_020's unsupported clause removed) first: application 100 %, 61.5 % exact
# (16 of 26), 4 silent drops, 2 substitutions, 0 invented faults, 4 false alarms, 9 campaign stops of 22; after: 100 %
# exact, 0/0/0/0, 3 stops left, each said back (rain degrading the camera, the cloud backend down; an EEBL run's BSM
# delay, which our EEBL does not read); fresh25 (2026-12-07: texting shorthand, typos, email reply chains with quoted
# text, sub-bullets, faults said by their effect, vague amounts, two units, hedging, an inline parameter list, an
# expected-vs-actual log, a run-on sentence, German and Spanish words; written after fresh24's rules) first: application
# 100 %, 70.4 % exact (19 of 27), 0 silent drops, 5 substitutions (quoted requests, a gloss read as a second fault, an
# "Actual:" line, "loses its own position fix"), 0 invented faults, 6 false alarms, 8 campaign stops of 22; after: 96.3 %
# exact, 0/0/0/0, 2 stops left, each said back (a GPS jam; "lead slows down at t=8 s", which no behaviour holds: ours
# brakes hard), 1 inexact (German: "ab dem Moment wo die Ampel rot wird ..., für 4 Sekunden"); fresh26 (2026-12-07:
# nested YAML in a code fence, Jira steps and acceptance criteria, OEM specification clauses, standup notes, questions
# to a colleague, British spellings and "kph", "~200 ms", negated alternatives, "PDR"/"AoI", two applications named
# for one run, a fault timed by the end of another, fractions; written after fresh25's rules; the labeller put signal
# groups as target phases in f26_007 and f26_017: relabelled "green", what both say is shown) first: application
# 93.3 %, 74.1 % exact (20 of 27), 0 silent drops, 2 substitutions, 2 invented faults ("No messages dropped or delayed",
# "TTC drops"), 5 false alarms, 1 refused (a start "about 300 metres out" read as a 300 m position offset on BSM for
# GLOSA), 9 campaign stops of 22; after: 100 % / 100 % exact, 0/0/0, 1 false alarm left (a 400 m junction spacing), 1
# stop (the ego's GNSS degraded: said back as no operator); fresh27 (2026-12-07: meeting minutes, an incident report,
# a CLI line, TOML and INI files, a pytest docstring, a paper's methods, an audit finding, a HARA row, a driver's SMS, a
# support ticket, a whiteboard with arrows, a changelog, German and French, mph and feet, a run sheet's clock times, a
# correction "edit: make that 3 s", a traceability line, a talk abstract; written after fresh26's rules; the prompt
# gave the labeller bsm_position_offset's sign backwards: f27_005 and f27_015 relabelled to the spec's, positive =
# reported behind) first: application 96.7 %, 47.8 % exact (11 of 23), 4 silent drops (a German MAP clause, a config's
# rain and wet road, a blinded camera), 3 substitutions (a test function's name "..._pos_lag" as a delay, "IMA holds
# last track? or drops it?" as a drop, a gloss "therefore appears 5 m farther away" as a second offset), 5 invented
# faults (deferred test cases, "the +2 s countdown offset we had in that batch", "Do NOT arm the ghost-vehicle ...
# injectors"), 4 false alarms (a past incident, a changelog, a robustness target over two clauses, a dated field
# trial), 1 refused ("Track cleared till 23:00" read as a 1,380 s window), 9 campaign stops of 22; after: 100 % / 87.0 %
# exact, 0/0/0/0, 6 stops left, each said back (the German and the French clauses, in which only English words are
# read; rain and a wet road set in an INI file, a GNSS jam with a heading flip, duplicated frames, a blinded camera);
# fresh28 (2026-12-07: a Slack line with emoji codes, an XML test case, an SQL insert, Python inject() calls, a numbered
# campaign plan whose first phase is nominal, HV/RV shorthand, a footnote correction "3s* (*0.3 s sorry, not 3)", a GSN
# safety case, a standards ballot comment, a product manager's hearsay, a results review, "what if ... let's run exactly
# that"; written after fresh27's rules, with the spec's sign of a position offset) first: application 100 %, 62.5 % exact
# (15 of 24), 3 silent drops ("Inject ghost RV", GNSS multipath, a rain simulation), 0 substitutions, 2 invented faults
# (a ballot's robustness figures, "the 150 ms delay we injected"), 4 false alarms, 8 campaign stops of 22; after:
# 100 % / 95.8 % exact, 0/0/0/0, 3 stops left, each said back (GNSS multipath with a second oncoming car 80 m behind,
# which no field holds; a rain simulation; duplicated BSMs), 1 inexact ("between 200 and 400 ms": the upper end bound);
# fresh29 (2026-12-07: a checklist with leader dots, a recipe, a statement of work, a newspaper headline, a sticky note,
# non-native English, a Q&A, Do / Don't, a radio call, a NOTAM in capitals, sports commentary, a narrator's script, a
# weather-forecast pun, a fault withdrawn as it is said "-- no wait, skip the second one", "i.e." and "approx." inside a
# sentence; written after fresh28's rules) first: application 90.0 %, 70.8 % exact (17 of 24), 2 silent drops (fog on
# the camera, a radar knocked out), 5 substitutions, 4 invented faults, 4 false alarms, 1 refused ("at 100 metres out"
# read as a 100 m position offset), 7 campaign stops of 22; after: 100 % / 100 % exact, 0/0/0, 1 false alarm left ("the
# light turns amber about 3.5 s before arrival": no field holds it), 4 stops, each said back (a brake at a 200 m
# marker, which no field holds; a GNSS jam; fog on the camera; a radar knocked out); fresh30 (2026-12-07: an exam
# question, a limerick, LaTeX with interval windows, a Kubernetes annotation, a weather-forecast parody, a shell script,
# Italian and Spanish, protobuf text format, a tweet thread, play-by-play, a Makefile target, a complaint letter, ELI5,
# an HTTP form body, a telegram with STOPs, an itinerary by clock of the day, a product review, a spreadsheet note, a
# contract clause, a forum post, a notebook cell, a horoscope, unicode bullets and "+1/4 s", a postcard, a TV listing;
# written after fresh29's rules) first: application 96.7 %, 55.6 % exact (15 of 27), 4 silent drops (a phase lie in
# verse, a pretend car, fog in a forecast, a radar blinded with mud), 1 substitution (a text-format key's start time as
# a magnitude), 2 invented faults (a variant "comes next week", a form body's commented-out variant), 5 false alarms, 1
# refused, 12 campaign stops of 22; after: 100 % / 100 % exact of those bound (24 of 26 bound, 2 refused with the
# reason: f30_022 asks IMA for a forged MAP, whose lane-to-group ties IMA never reads), 1 silent drop left (fog in the
# forecast's prose: weather said as the scene's setting is not reported, as in earlier sets), 0/0/0, 3 stops, each said
# back (a GNSS jam, a radar blinded with mud, the refused forged MAP). Found by it in the scene parser: "a car crossing
# from the right at 40 km/h" gave its speed to the ego, and "the light turns amber 3.5 s before the ego arrives" set a
# 3.5 s amber instead of the plan's offset (fresh17's f17_021 and fresh29's f29_025 now read it as the offset);
# fresh31 (2026-12-07: a stage direction, a museum placard, a lab notebook with units in brackets, a C comment block, a
# Rust struct literal, a git diff of a config, IF/THEN/ELSE pseudo-code, a state machine, a German-English acceptance
# test, Dutch, Portuguese, Unicode math "dt_delay = 0.4 s for t in [3 s, 10 s]", a military order with "t+00:05", a
# haiku, a cooking metaphor, a horror narrator, a job ad, a tour guide, a huddle, a ship's log in knots; written after
# fresh30's rules) first: application 96.7 %, 33.3 % exact (9 of 27), 4 silent drops, 3 substitutions ("80 m out" and
# "90 m off", an oncoming car's distance, read as position offsets; a freeze "stale like day-old bread ... only the
# timestamps fresh" read as a timestamp offset), 1 invented fault, 5 false alarms, 1 refused, 10 campaign stops of 22;
# after: 100 % / 92.6 % exact (25 of 27; the other 2 refused with the reason: a forged MAP asked of LTA), 0/0/0, 1
# false alarm left and 5 stops, each said back (an oncoming car's distance, "80 m out", "90 m off", "from 60 m": no field
# holds it while the ego waits at the junction; a radar jitter; a CAN checksum error; sun glare on the camera; the
# refused forged MAP). Found
# by it: "the lead car braked at t=14 s" was typo-corrected to "brake" and its time lost, a brake time read across a
# sentence end ("brakes hard. Just before, at t=9 s"), "from 3 s ago" taken as a start time; fresh32 (2026-12-07: a
# manager unsure of the terms, a thesis outline, a podcast, a Socratic dialogue, a dream, a manual's CAUTION/WARNING,
# Swedish and Polish acceptance notes, a dictionary entry, an auction lot, a bedtime story, an abstract, a pep talk, a
# fable, a property listing, a nature voice-over; a run-on sentence, a one-liner, a fault before its application,
# numbers in words, "1,500 ms", requests said as prohibitions ("don't let the next 30 SPaT messages through"),
# questions that are requests, typos "dealy" / "replayd" / "staring at" / "the hole run"; written after fresh31's
# rules) first: application 100 %, 61.5 % exact (16 of 26), 4 silent drops, 1 substitution, 2 invented faults, 4 false
# alarms, 6 campaign stops of 22; after: 100 % / 100 % exact, 0/0/0/0, 3 stops, each said back (GPS drift, a brake
# actuator delay, a CAN-bus attack). Found by it: a coupe's speed given to the ego (no vehicle noun), a quotation's
# closing mark kept a question and its refusal in one sentence ("...see what happens?' 'Not today,' said the hare");
# fresh33 (2026-12-07: people at work rather than formats: typed-up driver notes, a QA regression plan, a product
# owner's story, a city pilot's field report, a grumpy senior, a sales engineer, a safety assessor, an intern, a shift
# handover, a driver dictating "half a second, no wait, make that 800 milliseconds", Indian / Chinese / Spanish
# English, a three-fault request with one scrapped later, "same as last week but flip the sign", starts relative to the
# lead's braking, "nine out of ten get through", "until the end"; written after fresh32's rules) first: application
# 100 %, 70.4 % exact (19 of 27), 3 silent drops, 7 substitutions, 3 invented faults, 6 false alarms, 9 stops of 22;
# after: 96.7 % / 88.9 % exact (24 of 27; f33_007 refused with the reason: a countdown error from green onset cannot
# matter to RLVW), 0/0/0, 1 false alarm (an oncoming car "about 70 m away", as before) and 6 stops, each said back (GPS
# error, a cyclist, a brake actuator's lag, the refused countdown). Found by it: "make that 800 ms" read as "at 800 ms"
# (an anchor pattern without a word boundary: "th-at <time>"), "no real oncoming traffic" gave an oncoming car,
# "slams the brakes" and "two seconds after the lead brakes" unread, a taken-back fault ("scrap the burst drop") kept;
# its campaigns then showed two more: "hard-braking event messages" matched a vehicle's hard braking by backtracking
# ("hard-brakin"), so a phantom's lead braked and took the fault's start, and "at 15th second" was unread
# fresh34 (a marshals' radio call, podcast, deposition, recipe, sports commentary, support chat, read-back, product
# review, SMS shorthand, headline, crossword, voicemail, bug bounty, lesson plan, whiteboard, grant proposal, auction
# lot, track bulletin, quiz show, trailer voice-over, text adventure, dating profile, guidebook, tasting note, estate
# listing, documentary), the first set with scene labels: first read application 96.7 %, 75.0 % exact (18 of 24), 1
# silent drop ("half a second in the past -- no wait, make it 0.7 seconds": the correction read as a withdrawal), 2
# substitutions ("approaches at 35 mph from 220 metres out", "oncoming car 90 m out" read as position offsets), 3 invented
# ("the 300 ms BSM delay exercise is for next week's lesson -- do NOT inject it today", "their replay attack this
# afternoon -- but not here", "is postponed" read as a delay), 6 false alarms on 8 healthy intents, 17 stops of 22; scene
# 51 of 84 exact, 24 reported, 9 lost (the start distance said as "starting 180 m before the stop line", "400m to sig",
# "45 metres out"; "the same speed as us"; "way up ahead, 120 m", where a phantom in the sentence before also hid the
# gap; "45 miles an hour", "40 k's an hour"). After: 83.3 % exact, 0 / 0 / 0, 2 false alarms (a lesson's "(45 min)",
# "500 feet back of the stop line" with a follower), 9 stops; scene 72 exact, 8 reported, 4 lost ("doing 80" with no
# unit, an oncoming car's distance in a healthy intent, a brake "8 seconds into our date")
# fresh35 (a 5-whys post-mortem, legal disclaimer, cooking show, fortune cookie, board-game rule, safety card, RFC MUST,
# patent claim, hotel review, bingo caller, GPS voice, song, opera synopsis, wedding toast, audio guide, mountaineering
# log, tax form, parking ticket, abstract, villain's monologue, train announcement, knitting pattern, playbook, drill
# sergeant, changelog, error message), scored after fresh34's mends: first read application 96.7 %, 87.5 % exact (21 of
# 24), 0 silent drops, 4 substitutions ("10 m/s slower than us" a speed offset, "40 m out" a position offset, "stays
# late" a second delay), 8 invented on healthy intents ("such cases ... are expressly excluded", "those belong to the
# guest in the next room", "are dismissed and shall not be applied", "75 yards off" a position offset), 4 false alarms,
# 14 stops; scene 53 of 82 exact, 22 reported, 7 lost. After: 87.5 % exact, 0 silent, 1 substitution (f35_005, reported:
# a board game's "(Silence)" rule for "the next 5 BSMs in a row are removed from play"), 0 invented, 1 false alarm, 10
# stops; scene 66 exact, 13 reported, 3 lost
# fresh36 (plain working English: test engineers, assessors, product owners, drivers, operators, support), scored after
# fresh35's mends: first read application 93.3 % (the two misses are IMA map misassociations refused with the reason),
# 76.0 % exact (19 of 25), 1 silent drop ("... and add 3 m/s to its reported speed"), 0 substitutions, 2 invented
# ("We're NOT reproducing the delay", "The SPaT freeze thing is Priya's ticket, leave it out of this one"), 2 false
# alarms, 7 stops; scene 56 of 69 exact, 9 reported, 4 lost, one of them a **repair moving a stated start** ("90 m from
# the stop bar at start" -> 685.5 m: the parser now keeps a stated ego start or speed as it keeps a stated fault field).
# After: 88.0 % exact, 0 / 0 / 0 / 0, 4 stops; scene 64 exact, 5 reported, 0 lost
# fresh37 (real engineers at work, writing fast: a Jira ticket, Slack reply, emails in German, Japanese, Brazilian and
# Indian English, a pipe-separated test-plan row, code-review nit, 5 whys, shift handover, CSV line, regulator's letter,
# voice dictation, typos, Given/When/Then, commit message, PR description, lab notebook), scored after fresh36's mends:
# first read application 93.3 %, 62.1 % exact (18 of 29), 2 silent drops (a letter's "With reference to ..." swallowed
# its list of conditions; "a fake RSU pushing green ..., plus MAP tying the ego lane to the wrong signal group" became
# one forged MAP), 1 substitution, 0 invented, 4 false alarms, 13 stops (7 of them a crossing or oncoming car's distance
# to the conflict point, which no spec field held); scene 58 of 83 exact, 18 reported, 7 lost ("braking car 40 m ahead
# at 70 km/h" gave the ego the car's speed). After: 86.2 % exact, 0 / 0 / 0 / 0, 2 stops (both refusals: LTA reads no
# SPaT), the conflict distance bound as the car's arrival (or the ego placed to meet it); scene 77 exact, 1 lost
# fresh38 (platform teams and their tools: a YAML snippet, a JSON-ish payload, CLI flags, a log line, a config diff, a
# Terraform variable block, a markdown table, a forwarded email quoting an older request, a chat-bot command, a
# PagerDuty summary, a monitoring alert, a repro's numbered steps, a farm job), scored after fresh37's mends: first read
# application 100 %, 93.1 % exact (27 of 29), 0 silent drops, 3 substitutions (an incident's "received SPaT from an
# unauthorised RSU showing green" a second fault; "Runbook action: replay on platform" a replay; a config diff's "-"
# line), 0 invented, 0 false alarms, 7 stops; scene 67 of 81 exact, 6 reported, 8 lost (a forwarded request's "35 mph"
# set the ego's speed; "ego_v=[12 m/s]" and "start_dist_m = 400" unread). After: 100 % exact, 0 / 0 / 0 / 0, 3 stops
# (a JSON-ish payload, a monitoring alert's burst merged with the runbook's, EEBL reading no BSM drop); scene 78 exact,
# 1 lost (a tab-separated row)
# fresh39 (numbers in words, questions and hypotheticals, meeting minutes where one speaker corrects another, a CSV and
# a tab-separated sheet with units in the column names, Gherkin outlines with an Examples row, phone-typed notes,
# tickets, exclusions, imperial units, a request buried in a paragraph), first read: application 100 %, 57.1 % exact
# (16 of 28), 2 silent drops (a correction "Sorry, 30 m, not 40" / "OK, 30." withdrew the MAP fault it corrected; "the
# ghost vehicle is 20 m out" read as where a car is), 0 substitutions, 0 invented, 2 false alarms, 7 stops; scene 52 of
# 70 exact, 16 lost. After: 100 % exact, 0 / 0 / 0 / 0, 0 stops; scene 70 of 70 exact
# fresh40 (half machine-written: JSON bodies, curl, a Python call and dict, a Kubernetes resource, protobuf text, TOML,
# INI, a CI matrix, a log line, shell variables; half quick chats: corrections, voice notes, exclusions, typos), scored
# after fresh39's mends: first read application 100 %, 32.1 % exact (9 of 28), 2 silent drops, 2 substitutions, 0
# invented, 1 false alarm, 16 stops; scene 61 of 85 exact, 4 lost. After (one reader for structured payloads, one
# vocabulary of their keys, a writer's own corrections): 96.4 % exact, 0 / 0 / 0 / 0, 0 stops; scene 85 of 85 exact
# fresh41 (tools fresh40 did not use: a GraphQL mutation, an XML request, JSON5, a Helm values file with a list of
# actors, an HCL resource, a Robot Framework case, a pytest parametrize line, an SQL UPDATE, a CSV with quoted cells, a
# Jira REST payload, Ansible vars, a Dockerfile's ENV, a TestRail checklist, protobuf text in camelCase, a semicolon
# export; and an IEEE 829 specification, an email's disclaimer, nested bullets, a non-native writer, footnotes, a change
# request's old and new values, drafted variants of which one runs, a timestamped chat), scored after fresh40's mends:
# first read application 100 %, 62.1 % exact (18 of 29), 4 silent drops, 6 substitutions, 0 invented, 2 false alarms,
# 12 stops; scene 68 of 83 exact, 7 lost. After: 100 % exact, 0 / 0 / 0 / 0, 0 stops; scene 83 of 83 exact
# fresh42 (requirements with "shall", a hazard analysis row and an FMEA line, code-review comments, an unpunctuated voice
# transcript, a Slack thread with emoji and @mentions, Markdown parameter tables, a notebook cell's multi-line call with
# units in its comments, relative references "double the delay from case 3", mm:ss and ordinal times, deciseconds,
# a non-native writer, a First/Then/Finally plan, a dated lab notebook, a field report), scored after fresh41's mends:
# first read application 100 %, 74.2 % exact (23 of 31), 0 silent drops, 1 substitution, 1 invented, 3 false alarms,
# 12 stops; scene 87 of 95 exact, 5 lost. After: 100 % exact, 0 / 0 / 0 / 0, 0 stops; scene 95 of 95 exact
# fresh43 (commit messages, command lines with long flags, a FAQ, terse notes with arrows, semicolon key=value lists,
# steps to reproduce with a Notes section, either/or choices the writer resolves, odd units, a matrix with one row
# picked, a quoted request changed by its reply, a paper's prose, shouted tickets), scored after fresh42's mends: first
# read application 100 %, 76.9 % exact (20 of 26), 1 silent drop, 3 substitutions, 1 invented, 3 false alarms on 6
# healthy, 5 stops; scene 62 of 68 exact, 3 lost. After: 100 % exact, 0 / 0 / 0 / 0, 0 stops; scene 68 of 68 exact
FRESH2, FRESH3, FRESH4, FRESH5, FRESH6, FRESH7, FRESH8, FRESH9, FRESH10, FRESH11, FRESH12, FRESH13, FRESH14, FRESH15, \
    FRESH16, FRESH17, FRESH18, FRESH19, FRESH20, FRESH21, FRESH22, FRESH23, FRESH24, FRESH25, FRESH26, FRESH27, \
    FRESH28, FRESH29, FRESH30, FRESH31, FRESH32, FRESH33, FRESH34, FRESH35, FRESH36, FRESH37, \
    FRESH38, FRESH39, FRESH40, FRESH41, FRESH42, FRESH43 = (
        _SETS / f"parse_campaign_fresh{k}.jsonl"
        for k in range(2, 44))
TARGETS = {"silent_drops": 0, "substitutions": 0, "invented_faults": 0, "false_alarms": 0, "scene_lost": 0}
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP = frozenset("a an the of to and or is are it its it's for by in on at as from with when while that this "
                  "than be was".split())


def _close(got: Any, want: Any) -> bool:
    if want is None:
        return True  # the intent states none: the parser's choice is not scored
    if not isinstance(got, int | float) or isinstance(got, bool):
        return False
    return abs(got - want) <= 0.1 * abs(want) + 1e-9


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.lower()) if w not in _STOP}


def _quoted(message: str) -> str:
    """The clause a ``parser.unparsed_fault`` finding quotes (its first quoted string)."""
    m = re.search(r"'((?:[^'\\]|\\.|'(?=[a-z]))*)'|\"([^\"]*)\"", message)
    return (m.group(1) or m.group(2) or "") if m else ""


def reported_by(clause: str, findings: list[str]) -> bool:
    """A finding quotes (most of) the clause: it shares at least half of the clause's words."""
    want = _words(clause)
    return any(len(want & _words(q)) * 2 >= len(want) for q in findings) if want else False


def _view(fault: dict[str, Any]) -> dict[str, Any]:
    out = fault_view(fault)
    out["duration_s"] = fault.get("duration_s")
    out["target_phase"] = fault.get("target_phase")
    return out


def _binds(w: dict[str, Any], g: dict[str, Any]) -> bool:
    # the labelled operator itself always binds; ``alt`` adds operators that express the fault equally
    return g["operator"] in {w["operator"], *(w.get("alt") or ())} and g["stream"] in {w["stream"], *(w.get("streams") or ())}


def _exact(w: dict[str, Any], g: dict[str, Any]) -> dict[str, bool]:
    magnitude = w["magnitude"] if g["operator"] == w["operator"] else None  # an alt operator has its own magnitude
    return {"anchor": g["anchor"] == w["anchor"], "magnitude": _close(g["magnitude"], magnitude),
            "duration": _close(g["duration_s"], w.get("duration_s")),
            "target_phase": w.get("target_phase") is None or g["target_phase"] == w["target_phase"]}


def _match(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[int | None]:
    """For each labelled fault, the index of the answer fault binding it (a maximum matching, exact ones
    preferred), or None."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int], strict: bool) -> bool:
        for j, g in enumerate(got):
            if j in seen or not _binds(want[i], g) or (strict and not all(_exact(want[i], g).values())):
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen, strict):
                owner[j] = i
                return True
        return False

    for strict in (True, False):
        for i in range(len(want)):
            if i not in owner.values():
                augment(i, set(), strict)
    by_want = {i: j for j, i in owner.items()}
    return [by_want.get(i) for i in range(len(want))]


def score_row(row: dict[str, Any], roles: LlmRoles) -> dict[str, Any]:
    """One intent's verdicts: per labelled fault, per unsupported clause, the answer's extra faults."""
    labels = row["labels"]
    want: list[dict[str, Any]] = labels.get("faults", [])
    unsupported: list[str] = labels.get("unsupported", [])
    out: dict[str, Any] = {"id": row["id"], "text": row["text"], "app": labels["application"], "faults": [],
                           "unsupported": [], "extra": [], "false_alarms": [], "refused": None}
    try:
        res = roles.parse_intent(row["text"], row["seed"])
    except LastV2XError as exc:  # refused with a reason: reported, never silent
        out["refused"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        out["app_ok"] = False
        out["faults"] = [{"label": w, "verdict": "reported", "exact": False} for w in want]
        out["unsupported"] = [{"clause": c, "verdict": "reported"} for c in unsupported]
        out["scene"] = [{"label": v, "verdict": "reported", "got": None} for v in labels.get("scene", [])]
        return out
    first = res.history[0].data if res.history and isinstance(res.history[0].data, dict) else None
    data = first if first and isinstance(first.get("faults"), list) else res.spec.model_dump(mode="json")
    got = [_view(f) for f in data["faults"] if isinstance(f, dict)]
    quoted = [_quoted(f.message) for f in res.findings if f.check == UNPARSED]
    out["app_ok"] = data.get("application") == labels["application"]
    out["app_got"] = data.get("application")
    used: set[int] = set()
    for w, j in zip(want, _match(want, got), strict=True):
        if j is not None:
            used.add(j)
            fields = _exact(w, got[j])
            out["faults"].append({"label": w, "verdict": "bound", "exact": all(fields.values()), "fields": fields,
                                  "got": got[j]})
        else:
            verdict = "reported" if reported_by(w["clause"], quoted) else "silent"
            out["faults"].append({"label": w, "verdict": verdict, "exact": False, "got": None})
    for clause in unsupported:
        out["unsupported"].append({"clause": clause, "verdict": "reported" if reported_by(clause, quoted) else "silent"})
    out["extra"] = [g for j, g in enumerate(got) if j not in used]
    out["scene"] = score_scene(labels.get("scene", []), res.spec.model_dump(mode="json"), quoted, tuple(res.notes))
    if not want and not unsupported:
        out["false_alarms"] = quoted
    out["findings"] = quoted
    return out


SCENE_TOLERANCE = 0.05


def scene_value(spec: dict[str, Any], field: str, notes: tuple[str, ...] = ()) -> float | None:
    """The spec's value of a scene label's field (``lead.gap_m``, ``lead.brake_at_s``); None where unset. ``notes``: the
    parse's notes (a crossing or oncoming car's distance counts only where a note binds it)."""
    who, _, name = field.partition(".")
    if who == "ego":
        owner: dict[str, Any] | None = spec.get("ego")
    else:
        owner = next((a for a in spec.get("agents", ()) if a.get("role") == who), None)
    if owner is None:
        return None
    if name == "brake_at_s":
        behaviour = owner.get("behaviour") or {}
        return behaviour.get("at_time_s") if behaviour.get("kind") == "hard_brake" else None
    if who in ("cross", "opposing") and name == "gap_m":
        # the spec times these cars by their arrival at the conflict point: the distance that arrival implies under
        # the verifier's closed form (the grammar binds "45 m from the conflict point" so; None when left at the
        # default meeting, offset 0, with no distance said)
        ego = spec.get("ego") or {}
        if not any(n.startswith(f"{who}.arrival_offset_s") or (n.startswith("ego.start_distance_m") and
                                                               f"conflict point with {who}" in n) for n in notes):
            return None
        t_e = conflict_time_s(float(ego.get("start_distance_m", 120.0)), float(ego.get("speed_mps", 13.9)))
        return float(owner.get("speed_mps", 13.9)) * (t_e + float(owner.get("arrival_offset_s", 0.0)))
    value = owner.get(name)
    return float(value) if isinstance(value, int | float) else None


def score_scene(labels: list[dict[str, Any]], spec: dict[str, Any], quoted: list[str],
                notes: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for label in labels:
        got = scene_value(spec, label["field"], notes)
        want = float(label["value"])
        if got is not None and abs(got - want) <= SCENE_TOLERANCE * max(abs(want), 1e-9):
            verdict = "exact"
        elif reported_by(label["clause"], quoted):
            verdict = "reported"
        else:
            verdict = "lost"
        out.append({"label": label, "verdict": verdict, "got": got})
    return out


def run(rows: list[dict[str, Any]], roles: LlmRoles) -> dict[str, Any]:
    t0 = time.perf_counter()
    scored = [score_row(r, roles) for r in rows]
    c: Counter[str] = Counter()
    per_op: dict[str, Counter[str]] = defaultdict(Counter)
    per_app: dict[str, Counter[str]] = defaultdict(Counter)
    for s in scored:
        c["intents"] += 1
        c["app_ok"] += s["app_ok"]
        c["refused"] += s["refused"] is not None
        asks = bool(s["faults"] or s["unsupported"])
        for f in s["faults"]:
            op = f["label"]["operator"]
            for table, key in ((per_op, op), (per_app, s["app"])):
                table[key]["faults"] += 1
                table[key][f["verdict"]] += 1
                table[key]["exact"] += f["exact"]
            c["faults"] += 1
            c[f["verdict"]] += 1
            c["exact"] += f["exact"]
        for v in s.get("scene", ()):
            c["scene"] += 1
            c[f"scene_{v['verdict']}"] += 1
        for u in s["unsupported"]:
            c["unsupported"] += 1
            c[f"unsupported_{u['verdict']}"] += 1
            c[u["verdict"]] += u["verdict"] == "silent"
        if asks:
            c["substitutions"] += len(s["extra"])
            # a campaign stops on any clause the parser reports unread (never a run of something else than asked)
            c["campaign_stops"] += bool(s.get("findings")) or s["refused"] is not None
        else:
            c["invented"] += len(s["extra"])
            c["false_alarms"] += bool(s["false_alarms"])
            c["healthy"] += 1
    return {"counts": dict(c), "per_operator": {k: dict(v) for k, v in sorted(per_op.items())},
            "per_application": {k: dict(v) for k, v in sorted(per_app.items())}, "rows": scored,
            "seconds": time.perf_counter() - t0}


def summary(res: dict[str, Any]) -> dict[str, Any]:
    c = res["counts"]
    faults = c.get("faults", 0)
    return {"intents": c.get("intents", 0), "application": c.get("app_ok", 0) / max(1, c.get("intents", 0)),
            "faults": faults, "fault_exact": c.get("exact", 0) / max(1, faults),
            "bound": c.get("bound", 0), "reported": c.get("reported", 0),
            "unsupported": c.get("unsupported", 0), "unsupported_reported": c.get("unsupported_reported", 0),
            "silent_drops": c.get("silent", 0), "substitutions": c.get("substitutions", 0),
            "invented_faults": c.get("invented", 0), "healthy": c.get("healthy", 0),
            "false_alarms": c.get("false_alarms", 0), "refused": c.get("refused", 0),
            "campaign_stops": c.get("campaign_stops", 0), "scene": c.get("scene", 0),
            "scene_exact": c.get("scene_exact", 0), "scene_reported": c.get("scene_reported", 0),
            "scene_lost": c.get("scene_lost", 0)}


def _miss_lines(res: dict[str, Any]) -> list[str]:
    lines = []
    for s in res["rows"]:
        problems = []
        if not s["app_ok"]:
            problems.append(f"app {s.get('app_got')} (want {s['app']})")
        if s["refused"]:
            problems.append(f"refused {s['refused']}")
        for f in s["faults"]:
            w = f["label"]
            if f["verdict"] == "silent":
                problems.append(f"SILENT DROP {w['operator']}/{w['stream']} {w['clause']!r}")
            elif f["verdict"] == "reported":
                problems.append(f"reported (unbound) {w['operator']}/{w['stream']} {w['clause']!r}")
            elif not f["exact"]:
                bad = [k for k, ok in f["fields"].items() if not ok]
                problems.append(f"inexact {w['operator']} {bad}: got {f['got']}")
        for u in s["unsupported"]:
            if u["verdict"] == "silent":
                problems.append(f"SILENT DROP (unsupported) {u['clause']!r}")
        for v in s.get("scene", ()):
            if v["verdict"] == "lost":
                w = v["label"]
                problems.append(f"SCENE LOST {w['field']} {w['value']:g} (got {v['got']}) {w['clause']!r}")
        for g in s["extra"]:
            kind = "SUBSTITUTION" if s["faults"] or s["unsupported"] else "INVENTED"
            problems.append(f"{kind} {g}")
        if s["false_alarms"]:
            problems.append(f"false alarm {s['false_alarms']}")
        if (s["faults"] or s["unsupported"]) and s.get("findings") and not problems:
            problems.append(f"campaign stop: unread {s['findings']}")
        if problems:
            lines.append(f"{s['id']}: {s['text']}\n      " + "; ".join(problems))
    return lines


_COLUMNS = (("faults", 7), ("exact", 7), ("bound", 7), ("reported", 9), ("silent", 7))


def report(name: str, res: dict[str, Any], backend: str, verbose: bool) -> bool:
    s = summary(res)
    ok = all(s[k] <= v for k, v in TARGETS.items())
    print(f"\n== campaign intents, {name}: {s['intents']} intents ({s['healthy']} healthy), {s['faults']} labelled "
          f"faults + {s['unsupported']} unsupported, backend {backend}, {res['seconds']:.2f} s ==")
    print(f"application           {s['application']:.1%}")
    print(f"per-fault exact       {s['fault_exact']:.1%}  ({res['counts'].get('exact', 0)} of {s['faults']})")
    print(f"bound                 {s['bound']} of {s['faults']}")
    print(f"reported unparsed     {s['reported']} of {s['faults']} (+ {s['unsupported_reported']} of "
          f"{s['unsupported']} unsupported)")
    print(f"silent drops          {s['silent_drops']}   (target 0)")
    print(f"substitutions         {s['substitutions']}   (target 0)")
    print(f"invented faults       {s['invented_faults']}   (healthy intents; target 0)")
    print(f"false alarms          {s['false_alarms']} of {s['healthy']} healthy intents (target 0)")
    print(f"refused               {s['refused']}")
    print(f"campaign stops        {s['campaign_stops']} of {s['intents'] - s['healthy']} fault intents (an unread clause or "
          "a refusal: its campaign would not run)")
    if s["scene"]:
        print(f"scene values          {s['scene_exact']} of {s['scene']} exact, {s['scene_reported']} reported, "
              f"{s['scene_lost']} lost (target 0)")
    print(f"{'operator':<24}{'faults':>7}{'exact':>7}{'bound':>7}{'reported':>9}{'silent':>7}")
    for op, t in res["per_operator"].items():
        print(f"{op:<24}" + "".join(f"{t.get(k, 0):>{w}}" for k, w in _COLUMNS))
    print(f"{'application':<24}{'faults':>7}{'exact':>7}{'bound':>7}{'reported':>9}{'silent':>7}")
    for app, t in res["per_application"].items():
        print(f"{app:<24}" + "".join(f"{t.get(k, 0):>{w}}" for k, w in _COLUMNS))
    lines = _miss_lines(res)
    print(f"misses ({len(lines)} intents){':' if verbose else ' (-v lists them)'}")
    if verbose:
        for line in lines:
            print("  -", line)
    print(f"targets (0 silent drops, 0 substitutions, 0 invented, 0 false alarms): {'MET' if ok else 'MISSED'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--backend", default="offline")
    ap.add_argument("--json", type=Path, help="write the summary (and per-intent verdicts) here")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the targets are met")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    roles = LlmRoles(config=LlmConfig(backend=args.backend))
    res = run(load(args.data), roles)
    ok = report(args.data.name, res, roles.backend.name, args.verbose)
    if args.json:
        args.json.write_text(json.dumps({"summary": summary(res), **res}, indent=2, default=str))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
