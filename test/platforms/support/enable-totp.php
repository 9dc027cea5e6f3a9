<?php
/**
 * Enrols a user in OATHAuth's TOTP and prints the base32 secret. It stores the key as
 * Special:OATHManage does once the user has confirmed a code (TOTPEnableForm::onSubmit): a new
 * random TOTPKey, the "totp" module, OATHUserRepository::persist. No code is consumed, so the
 * user's first sign-in may use the current 30-s window.
 *
 * Usage: MW_INSTALL_PATH=/usr/share/mediawiki MW_CONFIG_FILE=… php enable-totp.php <user>
 */

use MediaWiki\Extension\OATHAuth\Key\TOTPKey;
use MediaWiki\MediaWikiServices;

require_once getenv( 'MW_INSTALL_PATH' ) . '/maintenance/Maintenance.php';

class EnableTotpForUser extends Maintenance {
	public function __construct() {
		parent::__construct();
		$this->addDescription( 'Enrol a user in OATHAuth TOTP and print the secret' );
		$this->addArg( 'user', 'The username to enrol.' );
		$this->requireExtension( 'OATHAuth' );
	}

	public function execute() {
		$name = $this->getArg( 0 );
		$user = User::newFromName( $name );
		if ( !$user || $user->getId() === 0 ) {
			$this->fatalError( "User $name doesn't exist!" );
		}
		$services = MediaWikiServices::getInstance();
		$repo = $services->getService( 'OATHUserRepository' );
		$oathUser = $repo->findByUser( $user );
		$key = TOTPKey::newFromRandom();
		$oathUser->setKeys( [ $key ] );
		$oathUser->setModule( $services->getService( 'OATHAuth' )->getModuleByKey( 'totp' ) );
		$repo->persist( $oathUser, 'Maintenance script' );
		$this->output( $key->getSecret() . "\n" );
	}
}

$maintClass = EnableTotpForUser::class;
require_once RUN_MAINTENANCE_IF_MAIN;
