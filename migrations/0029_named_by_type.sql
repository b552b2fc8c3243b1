-- Issue 43: a smaller file. A hook body names its event (`eventName`), which is the event's
-- type in almost every body: about 25 bytes of every row that the row's `type` says already.
-- Since 0026 the fields a session's events share are stored once, in `payload_shared`; the
-- writer now also leaves the event name out of the payload when it is the event's type, and
-- marks the shared fields with `"eventName": true` in its place (a name that is not the type
-- stays in the payload). Every reader writes the type back there (`src/event/shared.rs`); the
-- `events_whole` view below does too. Rows stored before this migration hold their name and
-- read as before.
--
-- Never edited after it lands.

DROP VIEW events_whole;
CREATE VIEW events_whole AS
SELECT sequence, event_id, session_id, session_sequence, type, source, event_time, received_at,
       CASE WHEN shared IS NULL THEN payload
            ELSE json_patch(payload,
                            (SELECT IIF(json_type(p.fields, '$.eventName') = 'true',
                                        json_set(p.fields, '$.eventName', events.type),
                                        p.fields)
                             FROM payload_shared p WHERE p.id = shared))
       END AS payload,
       origin
FROM events;
