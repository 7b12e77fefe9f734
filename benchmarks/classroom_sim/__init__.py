"""A class of N simulated students on one small server: Streamlit's own websocket protocol, no browsers.

    python benchmarks/student_sim.py [--students 60] [--trainers 6] [--duration 150]
        [--server-cores 0 | 0,1] [--browsers 2] [--curve] [--soak] [--inventory]

Each simulated student is a light asyncio client of the protocol the Streamlit frontend speaks
(`/_stcore/stream`, the `BackMsg` / `ForwardMsg` protobufs of the installed streamlit): it opens a
session (`rerun_script` with the page and query string), learns the pages from the `navigation`
message, keeps the element tree it is sent (deltas by path, stale ones dropped when a run
finishes, like the frontend), finds the widgets in it by type and label, and keeps their values
the way the frontend's widget manager does (defaults on mount, values the server sets, all sent
with every rerun). It also keeps the frontend's ForwardMsg cache (the server sends a `ref_hash`
for a large element the client says it holds) and emulates `run_every` fragments exactly as the
frontend does: on an `auto_rerun` message it sends a `rerun_script` with `fragment_id` and
`is_auto_rerun` every `interval` seconds, whether or not the last tick has finished, until a full
run or a `stop_auto_rerun` clears it.

A student moves between the pages and changes widgets found on them (Next/Previous, the query
token, the embeddings CSV box, number inputs, toggles, sliders, select boxes, the sample
settings); K trainers open the Train page, press Start and watch the live fragment tick (a new
run with another seed when one finishes). Per interaction it measures the time from sending the
change to the `script_finished` message (server side: nothing here renders), and counts errors:
exception elements, a run that finishes with an error, disconnects, timeouts.

Two or three real browsers (headless Chromium through Playwright, `--browsers`) run alongside and
measure click-to-render end to end under the same load (benchmarks/classroom_load.py's student).

The server is pinned to `--server-cores` (taskset semantics via sched_setaffinity: `0` = one
core), this process and the browsers to the remaining core (core 1). Loopback only, bounded in
time, stops by itself; the last printed line is one JSON object.

Phases: cold start; one student visits every page (the one-student RSS); N students arrive within
--arrival-s and act until --duration is over; all leave; after the server's disconnected-session
TTL (--leave-wait) the RSS is read again (a leak shows as RSS that stays up).

--curve runs N = 10, 30, 60, 90 (K = N / 10) and prints a table. --soak kills the server with
kill -9 halfway and restarts it: the clients reconnect; before the kill each trainer downloads
its checkpoint through the download button (the deferred-file protocol), and after the restart
uploads it through the file uploader (the upload protocol) and checks the run is back at its step.
--inventory prints the widgets of every page and exits (to check what the simulator sees).

--class-mode runs one class in class mode instead (class_mode.py): the server gets a lecturer key
and a fresh SQLite store; a lecturer starts a class, opens a challenge and tours the poll pages
(waits, reveals, steps on); N students join with the code within --arrival-s, follow and answer
every poll; K of them train a short Quick demo run and submit it. It prints the class targets:
p95 interaction, errors, every answer counted exactly once (the store's rows against what the
pages confirmed), poll lag and follow lag p95 <= 2 s, peak RSS <= 1 GB, K entries on the board.

Modules: `protocol` (run statuses, element nodes, widget values on mount, the HTTP side), `client`
(one simulated tab: the websocket client), `stats` (what the clients measure, the students' plan),
`behaviours` (a student's widget changes and walk), `trainers` (the Train page's users), `browsers`
(real Chromium alongside), `server` (the app under test, its memory and CPU), `phases` (the
warm-up and the wait for a class's clients), `classroom` (one run), `class_mode` (a class in class
mode), `report` (its figures and verdict), `cli` (the command line). The entry script is
benchmarks/student_sim.py.
"""
