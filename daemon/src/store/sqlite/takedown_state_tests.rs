//! The migration that made a takedown a state of its own (schema_v23.sql):
//! links a takedown in force had switched off are taken down and no
//! longer `disabled`; one its owner had switched off stays so; the links
//! of an undone takedown are left as they were.

use rusqlite::Connection;

use super::migrations_to;
use super::MIGRATIONS;

#[test]
fn takedowns_in_force_become_the_taken_down_state() {
    let mut c = Connection::open_in_memory().unwrap();
    super::keys::register_secret_functions(&c, None).unwrap();
    migrations_to(22).to_latest(&mut c).unwrap();
    c.execute_batch(
        "INSERT INTO links (id, url, created_at, updated_at, disabled, tags) VALUES
             (1, 'https://bad.example/a', 0, 0, 1, '[]'),
             (2, 'https://bad.example/b', 0, 0, 1, '[]'),
             (3, 'https://gone.example/c', 0, 0, 1, '[]'),
             (4, 'https://ok.example/d', 0, 0, 0, '[]');
         INSERT INTO takedowns (id, kind, selector, reason, created_by, created_at, matched, disabled)
             VALUES (7, 'host', 'bad.example', 'phishing', 'cli', 0, 2, 1),
                    (8, 'host', 'gone.example', 'old', 'cli', 0, 1, 1);
         UPDATE takedowns SET undone_at = 5, undone_by = 'cli' WHERE id = 8;
         INSERT INTO takedown_links (takedown_id, link_id, changed) VALUES
             (7, 1, 1), (7, 2, 0), (8, 3, 1);",
    )
    .unwrap();
    migrations_to(MIGRATIONS.len()).to_latest(&mut c).unwrap();
    let state = |id: i64| -> (bool, bool) {
        c.query_row(
            "SELECT taken_down, disabled FROM links WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    assert_eq!(state(1), (true, false), "switched off by the takedown");
    assert_eq!(state(2), (true, true), "its owner had switched it off");
    assert_eq!(
        state(3),
        (false, true),
        "an undone takedown's link, as it was"
    );
    assert_eq!(state(4), (false, false));
}
