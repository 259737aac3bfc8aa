grammar Tir;
prog : ID* EOF ;
ID : [a-z]+ ;
WS : [ \t\r\n]+ -> skip ;
