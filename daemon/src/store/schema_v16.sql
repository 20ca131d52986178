-- Reserved: version 16 belongs to another branch of this release (its
-- migration replaces this file when the branches meet). Nothing here.
SELECT 1;
