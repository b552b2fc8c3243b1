-- Issue 41: fewer pages an acknowledged hook event, as 0031 and 0032 did for tool uses and
-- missions. A permission request is opened by an event of its own session and keyed by that
-- event's sequence, so a session's requests are found by walking the session's events and
-- looking each one up by its key: `permission_requests_session`, whose entry for a new request
-- landed on a page of its session's, goes. Requests whose opening event retention pruned (they
-- outlive it) are marked (`opening_pruned` = 1, set when the event goes) and found through
-- `permission_requests_pruned`.
--
-- Never edited after it lands.

DROP INDEX permission_requests_session;
ALTER TABLE permission_requests ADD COLUMN opening_pruned INTEGER;
UPDATE permission_requests SET opening_pruned = 1
 WHERE NOT EXISTS (SELECT 1 FROM events WHERE events.sequence = permission_requests.sequence);
CREATE INDEX permission_requests_pruned ON permission_requests (session_id, sequence)
    WHERE opening_pruned = 1;
