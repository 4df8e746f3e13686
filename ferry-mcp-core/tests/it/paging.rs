//! The lazy folds a warm open leaves in the kept state (the order board, talk) are read only
//! through the session, which pages them in: read straight from the state before that, they
//! say so in a typed error (`NotPaged`), never a crash (issue 16).

use ferry_mcp_core::channel::fold::state::NotPaged;
use ferry_mcp_core::channel::ops;
use ferry_mcp_testkit::temp_channel::TempChannel;

#[test]
fn a_warm_open_s_state_says_the_board_and_talk_are_not_paged_in_until_the_session_pages_them() {
    let temp = TempChannel::with_each_level();
    let mut master = temp.master_session();
    let request = ops::orders::IssueRequest {
        title: "paged".to_owned(),
        ..Default::default()
    };
    let id = ops::orders::issue(&mut master, &request, temp.now()).unwrap();
    master.save().unwrap();
    drop(master);

    // A warm open reads the core of the kept state, not the board's row nor talk's.
    let mut warm = temp.view();
    assert_eq!(warm.state().orders().err(), Some(NotPaged::Board));
    assert_eq!(warm.state().talk().err(), Some(NotPaged::Talk));
    assert_eq!(warm.state().problems().err(), Some(NotPaged::Board));

    let board = warm.board().unwrap();
    assert!(board.get(&id.parse().unwrap()).is_some(), "{id}");
    assert!(warm.state().orders().is_ok());
    assert_eq!(warm.state().talk().err(), Some(NotPaged::Talk));
    warm.talk().unwrap();
    assert!(warm.state().problems().is_ok());
}
