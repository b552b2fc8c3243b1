-- Issue 41: an event costs the same however many subagents its session has left running. A
-- subagent's events (its `SubagentStart` and `SubagentStop`, its tool calls, which name it by
-- `agent_id`) look up its active mission by the subagent's id, and a `SubagentStart` looks up
-- the `Task` call that spawned it among the running tools. Through `missions_active` and
-- `tool_uses_running` alone both read every active mission, or every running tool, of the
-- session (a subagent never stopped, an agent killed mid-turn): with 600 subagents left
-- running in a session, a hook event cost the writer 199 µs against 129 µs with about 120.
--
-- Each index holds only what its lookup asks for: the active missions that are subagents,
-- by subagent id, and the running tool calls that spawn subagents.
--
-- Never edited after it lands.

CREATE INDEX missions_active_subagents ON missions (session_id, subagent_id, opened_sequence)
    WHERE state = 'active' AND subagent_id IS NOT NULL;
CREATE INDEX tool_uses_running_spawners ON tool_uses (session_id, opened_sequence)
    WHERE status = 'running' AND kind = 'subagent';
