-- Fencing (DESIGN §11): an action's lease number grows each time the action changes hands (claimed,
-- recovered). Every write a runner makes for the action names the number it holds and is refused
-- once the action has moved on.
ALTER TABLE actions ADD COLUMN lease INTEGER NOT NULL DEFAULT 0;
